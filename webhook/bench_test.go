package webhook

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReceiver posts signed webhooks over real HTTP on loopback from 64
// parallel clients to a receiver publishing into embedded in-process
// JetStream, and reports webhooks/s and the answer latency (until the 200,
// which comes after the JetStream ack) at p50 and p99.
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
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	defer client.CloseIdleConnections()

	type signed struct {
		body []byte
		sig  string
	}
	reqs := make([]signed, b.N)
	for i := range reqs {
		body := fmt.Appendf(nil, `{"orderId":"%d","orderReference":"ped_%08x","orderType":"FASTLINK_CHARGE","description":"La orden fue pagada exitosamente","metadata":{"PaymentId":"pay_%08x","AuthorizationCode":"204981","Status":"Pagada"},"level":"Info","type":"SuccessPayment"}`, 100000+i, i, i)
		reqs[i] = signed{body, Sign(oldSecret, body)}
	}
	url := srv.URL + Path
	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		latencies = make([][]time.Duration, clients)
	)
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(reqs[i].body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(SignatureHeader, reqs[i].sig)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				latencies[c] = append(latencies[c], time.Since(t0))
				if res.StatusCode != http.StatusOK {
					b.Errorf("status %d", res.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
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
}
