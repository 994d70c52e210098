package worker_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestPoolIdleReadsPressureRarely: a pulled event wakes the idle pool's
// read of the receiver's publish wait at once, not at its idle read ten
// intervals away (TestYieldLoopIdleReadsRarely holds the idle spacing on
// synctest's clock).
func TestPoolIdleReadsPressureRarely(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	e := newPoolEnv(t, sim.Faults{})
	orders := e.createOrders(t, 1)
	var reads atomic.Int64
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.PressureInterval = interval
		c.Pressure = func() (time.Duration, int64) {
			reads.Add(1)
			return 0, 0
		}
	})
	waitFor(t, 5*time.Second, "the first read of the publish wait", func() bool { return reads.Load() >= 1 })
	idle := reads.Load()
	e.publish(t, e.webhook(orders[0].OrderID, ordersync.EventCreated))
	// Before the idle read, ten intervals after the first.
	waitFor(t, 5*time.Second, "a read after the pulled event", func() bool { return reads.Load() > idle })
}
