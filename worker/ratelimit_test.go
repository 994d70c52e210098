package worker_test

import (
	"context"
	"fmt"
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
	t.Parallel()
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

// TestLinkCreationCountsAgainstTheCap: creating a link spends the same
// rate limit as the fetches, so upstream_rps caps every request ordersync
// sends. 11 creations are 22 requests (each creation's first fetch
// follows it); at 20/s with a burst of 1 they take at least 21/20 s, while
// the fetches alone would take 10/20 s. Only a lower bound on the time is
// asserted: a slow machine cannot make it fail.
func TestLinkCreationCountsAgainstTheCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.RequestsPerSecond, c.Burst = 20, 1 })
	follower, err := worker.NewFollower(worker.FollowerConfig{Accounts: worker.Accounts{ordersync.DefaultAccount: s}, Mirror: e.db, Reader: e.db})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 11 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			amount := ordersync.MustAmount(fmt.Sprintf("%d.00", i+1))
			if _, err := follower.CreatePaymentLink(context.Background(), ordersync.DefaultAccount, ordersync.PaymentLinkParams{Amount: &amount}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("11 links and their first fetches (22 requests) took %s: link creation skipped the 20/s cap", elapsed)
	}
	if st := e.sim.Stats(); st.Gets != 11 {
		t.Fatalf("the service saw %d fetches, want 11 (one per created link)", st.Gets)
	}
}
