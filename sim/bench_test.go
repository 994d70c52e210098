package sim

import (
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/rusage"
)

// BenchmarkGetOrder measures GET /paymentlink/order over real loopback HTTP
// with 64 concurrent clients (keep-alive connections), as a worker pool
// fetching order details would.
func BenchmarkGetOrder(b *testing.B) {
	const clients, orders = 64, 1000
	ts := startSim(b, Config{})
	codes := make([]string, orders)
	for i := range codes {
		res, err := ts.CreatePaymentLink(amountParams("19.99"))
		if err != nil {
			b.Fatal(err)
		}
		codes[i] = res.OrderCode
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	var next atomic.Uint64
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := rusage.Start(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		// Each client reuses its requests (allowed once the body is
		// closed), so the measure is the server more than the client.
		first := next.Add(16)
		reqs := make([]*http.Request, 16)
		for i := range reqs {
			req, err := http.NewRequest(http.MethodGet, ts.url+"/paymentlink/order/"+codes[(first+uint64(i))%orders], nil)
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+testKey)
			reqs[i] = req
		}
		for i := 0; pb.Next(); i++ {
			resp, err := client.Do(reqs[i%len(reqs)])
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("HTTP %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	cpu.Report(b, b.N, "cpu-µs/req")
}
