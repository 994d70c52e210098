package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestRequestsPerSecondCap: however many callers fetch at once, requests
// leave no faster than the configured cap. Only a lower bound on the time
// is asserted: a slow machine cannot make it fail.
func TestRequestsPerSecondCap(t *testing.T) {
	e := newFakeEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.RequestsPerSecond, c.Burst = 40, 1 })
	orders := e.createOrders(t, 41)
	start := time.Now()
	var wg sync.WaitGroup
	for _, o := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.Fetch(context.Background(), ordersync.DefaultAccount, o.OrderCode); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// 41 requests with a burst of 1 at 40/s take at least 40/40 s.
	if elapsed := time.Since(start); elapsed < 950*time.Millisecond {
		t.Fatalf("41 requests took %s: the 40/s cap was not applied", elapsed)
	}
	if got := e.sim.Stats().Gets; got != 41 {
		t.Fatalf("the service saw %d requests, want 41", got)
	}
}
