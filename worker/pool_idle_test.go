package worker_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestPoolIdleReadsPressureRarely: while no webhook is answered and no
// event pulled, the pool does not read the receiver's publish wait every
// interval (an idle process woken twenty times a second for nothing), but
// only every tenth; a pulled event makes it read at once. The test waits
// out a window of two intervals, since what it proves is that no read
// happened within it; a slow machine reads less, not more.
func TestPoolIdleReadsPressureRarely(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	e := newEnv(t, sim.Faults{})
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
	// The pool's own PressureInterval ticker is the subject, beside real
	// JetStream (which cannot run on synctest's clock): the window in which
	// no read may happen.
	time.Sleep(2 * interval)
	if got := reads.Load() - idle; got != 0 {
		t.Fatalf("%d reads of the publish wait in %s with nothing happening, want none", got, 2*interval)
	}
	e.publish(t, e.webhook(orders[0].OrderID, ordersync.EventCreated))
	// Before the idle read, eight intervals away.
	waitFor(t, 5*time.Second, "a read after the pulled event", func() bool { return reads.Load() > idle })
}
