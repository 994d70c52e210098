package dispatch_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/internal/testenv"
)

// BenchmarkDispatch measures HTTP deliveries: b.N order events published
// to the orders stream, each delivered to every endpoint (fast loopback
// endpoints that verify the signature and answer 204). It reports
// deliveries per second, the process's CPU per delivery (the endpoints'
// verification included), and the latency from the publication of an event
// (which the relay makes right after the mirror's commit) to the endpoint's
// answer, p50 and p99: in a burst (every event published at once, so mostly
// the queue's wait) and paced (one event a millisecond).
func BenchmarkDispatch(b *testing.B) {
	for _, endpoints := range []int{1, 10} {
		b.Run(fmt.Sprintf("endpoints=%d", endpoints), func(b *testing.B) { benchDispatch(b, endpoints, 0) })
	}
	b.Run("endpoints=1/paced", func(b *testing.B) { benchDispatch(b, 1, time.Millisecond) })
}

// benchDispatch publishes the events at once (every 0) or one every.
func benchDispatch(b *testing.B, endpoints int, every time.Duration) {
	e := newDispatchEnv(b)
	var mu sync.Mutex
	var latencies []time.Duration
	published := map[string]time.Time{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := delivery.Verify(hookSecret, r.Header, body, 0); err != nil {
			http.Error(w, "signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		mu.Lock()
		latencies = append(latencies, time.Since(published[orderOf(body)]))
		mu.Unlock()
	}))
	b.Cleanup(hook.Close)
	for range endpoints {
		e.addEndpoint(b, hook.URL, ordersync.HookOrderStatusChanged)
	}
	msgs := make([]ordersync.OutboxMessage, b.N)
	for i := range msgs {
		msgs[i] = orderMsg(fmt.Sprintf("B%07d", i), ordersync.StatusPending, 1, false)
	}
	want := b.N * endpoints

	b.ResetTimer()
	cpu := rusage.Start(b)
	start := time.Now()
	if every == 0 {
		mu.Lock()
		for _, m := range msgs {
			published[m.OrderCode] = time.Now()
		}
		mu.Unlock()
		e.publishOrders(b, msgs...)
	} else {
		for _, m := range msgs {
			mu.Lock()
			published[m.OrderCode] = time.Now()
			mu.Unlock()
			e.publishOrders(b, m)
			time.Sleep(every) // paces the publishes: their rate is the subject
		}
	}
	testenv.WaitFor(b, 5*time.Minute, "every delivery", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(latencies) >= want
	})
	elapsed := time.Since(start)
	cpu.Stop()
	b.StopTimer()

	mu.Lock()
	defer mu.Unlock()
	slices.Sort(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "deliveries/s")
	cpu.Report(b, len(latencies), "cpu-µs/delivery")
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}

// orderOf is the orderCode of a delivery's body.
func orderOf(body []byte) string {
	var ev struct {
		Data struct {
			OrderCode string `json:"orderCode"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	return ev.Data.OrderCode
}
