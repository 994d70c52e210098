package worker_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// BenchmarkPipeline: b.N orders in the simulator (no added latency), one
// webhook each already in an embedded JetStream queue; the timed part is the
// pool draining them into a SQLite mirror over real HTTP: resolve, fetch,
// group commit, ack. Reports orders/s end to end, fetches per order and
// the CPU time per order of the whole process (simulator included): on a
// shared 2-core machine, the figure that varies least between runs.
func BenchmarkPipeline(b *testing.B) {
	e := newEnv(b, sim.Faults{})
	orders := e.createOrders(b, b.N)
	evs := make([]*ordersync.InboundEvent, len(orders))
	for i, o := range orders {
		evs[i] = e.webhook(o.OrderID, ordersync.EventCreated)
	}
	e.publish(b, evs...)
	s := e.newSyncer(b, nil, nil)

	var applied atomic.Int64
	done := make(chan struct{})
	cpu := rusage.Start(b)
	start := time.Now()
	b.ResetTimer()
	e.startPool(b, s, func(c *worker.PoolConfig) {
		c.FetchConcurrency, c.BatchSize, c.PullWait = 0, 0, 0 // the defaults
		c.OnApplied = func(rs []ordersync.ApplyResult) {
			if applied.Add(int64(len(rs))) == int64(b.N) {
				close(done)
			}
		}
	})
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d orders applied", applied.Load(), b.N)
	}
	elapsed := time.Since(start)
	cpu.Stop()
	b.StopTimer()
	e.waitDrained(b, 30*time.Second)

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	b.ReportMetric(float64(e.sim.Stats().Gets)/float64(b.N), "fetches/order")
	cpu.Report(b, b.N, "cpu-µs/order")
}
