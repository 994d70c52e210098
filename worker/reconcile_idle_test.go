package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/worker"
)

// claimCounter counts the reconciler's asks for due work.
type claimCounter struct {
	ordersync.CheckSchedule
	claims atomic.Int64
}

func (c *claimCounter) ClaimDueChecks(ctx context.Context, account string, now time.Time, limit int, retryAt time.Time) ([]ordersync.DueCheck, error) {
	c.claims.Add(1)
	return c.CheckSchedule.ClaimDueChecks(ctx, account, now, limit, retryAt)
}

// noChecks is a Syncer the test never expects a check of.
type noChecks struct{}

func (noChecks) CheckOrder(context.Context, string, string, func(context.Context) error) (ordersync.ApplyResult, error) {
	return ordersync.ApplyResult{}, errors.New("no check expected")
}

// TestReconcilerIdleSleepsUntilWoken: with nothing on the schedule the
// reconciler does not ask for due work again within a window (it used to
// every second), and Tighten wakes it at once, well before its Idle cap.
// The test waits out the window, since what it proves is that no claim
// happened within it; a slow machine claims less, not more.
func TestReconcilerIdleSleepsUntilWoken(t *testing.T) {
	t.Parallel()
	sched := &claimCounter{CheckSchedule: fake.NewStore()}
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: sched, Syncer: noChecks{}, Registerer: prometheus.NewRegistry(), Idle: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// The first claim, and the one the start's Tighten woke.
	waitFor(t, 5*time.Second, "the reconciler's first claims", func() bool { return sched.claims.Load() >= 2 })
	idle := sched.claims.Load()
	time.Sleep(3 * time.Second) // the window in which no claim may happen
	if got := sched.claims.Load() - idle; got != 0 {
		t.Fatalf("%d claims of due work in 3s with nothing on the schedule, want none", got)
	}
	if err := rec.Tighten(ctx, time.Now(), "missed_webhook"); err != nil {
		t.Fatal(err)
	}
	// Within a third of the 30 s Idle cap: Tighten woke it.
	waitFor(t, 10*time.Second, "a claim after Tighten", func() bool { return sched.claims.Load() > idle })
}
