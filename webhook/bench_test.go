package webhook

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/loadpost"
	"github.com/ordersync/ordersync/internal/rusage"
)

// BenchmarkReceiver posts signed webhooks over real HTTP on loopback from 64
// connections to a receiver publishing into embedded in-process JetStream,
// and reports webhooks/s and the answer latency (until the 200, which comes
// after the JetStream ack) at p50 and p99, and the process's CPU time per
// webhook: receiver, JetStream and load generator together. The load
// generator is internal/loadpost, which leaves most of the machine to the
// receiver.
func BenchmarkReceiver(b *testing.B) {
	const clients = 64
	tq := startQueue(b, b.TempDir(), queueConfig())
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(rc)
	defer func() {
		srv.Close()
		rc.Close()
	}()
	poster, err := loadpost.New(loadpost.Config{URL: srv.URL + Path, Connections: clients, SignatureHeader: SignatureHeader,
		Sign: func(body []byte) string { return Sign(oldSecret, body) }})
	if err != nil {
		b.Fatal(err)
	}
	defer poster.Close()

	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"orderId":"%d","orderReference":"ped_%08x","orderType":"FASTLINK_CHARGE","description":"La orden fue pagada exitosamente","metadata":{"PaymentId":"pay_%08x","AuthorizationCode":"204981","Status":"Pagada"},"level":"Info","type":"SuccessPayment"}`, 100000+i, i, i)
	}
	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		latencies = make([][]time.Duration, clients)
	)
	cpu := rusage.Start(b)
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				t0 := time.Now()
				status, err := poster.Post(bodies[i])
				if err != nil {
					b.Error(err)
					return
				}
				latencies[c] = append(latencies[c], time.Since(t0))
				if status != http.StatusOK {
					b.Errorf("status %d", status)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu.Stop()
	b.StopTimer()
	all := slices.Concat(latencies...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "webhooks/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	cpu.Report(b, len(all), "cpu-µs/webhook")
}
