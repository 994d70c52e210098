package worker_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// The most allocations the process may make per webhook the pool takes,
// from an embedded JetStream into a SQLite mirror with the simulator over
// loopback HTTP: the webhook's publication, the pool's pull, resolve and
// fetch, the simulator's answer, the group commit and the ack. Each sits
// about a sixth above the median count when it was set (new orders
// 408-504, status changes 447-530 in 17 runs, idle and loaded), as the
// NATS server and client allocate beside it and the batches vary with
// the load.
const (
	poolNewOrderAllocBudget     = 560 // a Created webhook of an order new to the mirror
	poolStatusChangeAllocBudget = 600 // a SuccessPayment webhook of a mirrored order, now PAID
)

// TestPoolAllocBudget holds the pool to its allocation budgets, for new
// orders and for status changes.
func TestPoolAllocBudget(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	const warm, n = 20, 200
	orders := e.createOrders(t, warm+n)
	var applied atomic.Int64
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.FetchConcurrency, c.BatchSize, c.PullWait = 0, 0, 0 // the defaults
		c.OnApplied = func(rs []ordersync.ApplyResult) { applied.Add(int64(len(rs))) }
	})
	// take publishes a webhook of typ for each order and returns the
	// allocations per webhook until the pool applied them all.
	take := func(orders []ordersync.PaymentLinkResult, typ ordersync.EventType) float64 {
		t.Helper()
		evs := make([]*ordersync.InboundEvent, len(orders))
		for i, o := range orders {
			evs[i] = e.webhook(o.OrderID, typ)
		}
		want := applied.Load() + int64(len(orders))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e.publish(t, evs...)
		waitFor(t, time.Minute, "every webhook applied", func() bool { return applied.Load() >= want })
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / float64(len(orders))
	}
	take(orders[:warm], ordersync.EventCreated) // connections, statements and buffers made once
	created := take(orders[warm:], ordersync.EventCreated)
	for _, o := range orders[warm:] {
		if _, err := e.sim.Pay(o.OrderCode, ordersync.Buyer{Name: "Ana", Email: "ana@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	paid := take(orders[warm:], ordersync.EventSuccessPayment)
	t.Logf("%.0f allocations per new order (budget %d), %.0f per status change (budget %d)",
		created, poolNewOrderAllocBudget, paid, poolStatusChangeAllocBudget)
	if created > poolNewOrderAllocBudget {
		t.Errorf("the pool allocates %.0f times per new order, over its budget of %d", created, poolNewOrderAllocBudget)
	}
	if paid > poolStatusChangeAllocBudget {
		t.Errorf("the pool allocates %.0f times per status change, over its budget of %d", paid, poolStatusChangeAllocBudget)
	}
}
