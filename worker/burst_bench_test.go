package worker_test

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// BenchmarkPipelineBursts: like BenchmarkPipeline, but each of the b.N
// orders gets a burst of 10 webhooks in a row, as when the provider retries
// or reports several steps of one payment at once. Coalescing should keep
// upstream fetches near 1 per order, never 10.
func BenchmarkPipelineBursts(b *testing.B) {
	const burst = 10
	e := newEnv(b, sim.Faults{})
	orders := e.createOrders(b, b.N)
	evs := make([]*ordersync.InboundEvent, 0, b.N*burst)
	for _, o := range orders {
		for range burst {
			evs = append(evs, e.webhook(o.OrderID, ordersync.EventUpdated))
		}
	}
	e.publish(b, evs...)
	s := e.newSyncer(b, nil, nil)

	start := time.Now()
	b.ResetTimer()
	e.startPool(b, s, func(c *worker.PoolConfig) {
		c.FetchConcurrency, c.BatchSize, c.PullWait = 0, 0, 0 // the defaults
	})
	e.waitDrained(b, 5*time.Minute)
	elapsed := time.Since(start)
	b.StopTimer()

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	b.ReportMetric(float64(b.N*burst)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(e.sim.Stats().Gets)/float64(b.N), "fetches/order")
}
