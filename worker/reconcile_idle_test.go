package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/worker"
)

// claimCounter counts the reconciler's asks for due work and its reads of
// the backlog; readAfterClaim, when made (buffered), is signalled by the
// first read after a claim that returned checks.
type claimCounter struct {
	ordersync.CheckSchedule
	claims, reads  atomic.Int64
	claimed        atomic.Bool
	readAfterClaim chan struct{}
}

func (c *claimCounter) ClaimDueChecks(ctx context.Context, account string, now time.Time, limit int, retryAt time.Time) ([]ordersync.DueCheck, error) {
	c.claims.Add(1)
	due, err := c.CheckSchedule.ClaimDueChecks(ctx, account, now, limit, retryAt)
	if len(due) > 0 {
		c.claimed.Store(true)
	}
	return due, err
}

func (c *claimCounter) CheckBacklog(ctx context.Context, account string, now time.Time) (ordersync.CheckBacklog, error) {
	b, err := c.CheckSchedule.CheckBacklog(ctx, account, now)
	c.reads.Add(1)
	if c.claimed.CompareAndSwap(true, false) && c.readAfterClaim != nil {
		select {
		case c.readAfterClaim <- struct{}{}:
		default:
		}
	}
	return b, err
}

// noChecks is a Syncer the test never expects a check of.
type noChecks struct{}

func (noChecks) CheckOrder(context.Context, string, string, func(context.Context) error) (ordersync.ApplyResult, error) {
	return ordersync.ApplyResult{}, errors.New("no check expected")
}

// TestReconcilerIdleSleepsUntilWoken: with nothing on the schedule the
// reconciler does not ask for due work again before its Idle cap (it used
// to every second), and Tighten wakes it at once. The clock is synctest's,
// so "no claim within the window" is exact and costs no wall time.
func TestReconcilerIdleSleepsUntilWoken(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const idle = 30 * time.Second
		sched := &claimCounter{CheckSchedule: fake.NewStore()}
		rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: sched, Syncer: noChecks{}, Registerer: prometheus.NewRegistry(), Idle: idle})
		if err != nil {
			t.Fatal(err)
		}
		ctx := runReconciler(t, rec)
		// The first claim: the start's Tighten wakes nothing more, since
		// the loop claims at once.
		synctest.Wait()
		if got := sched.claims.Load(); got != 1 {
			t.Fatalf("%d claims at the start with nothing on the schedule, want 1", got)
		}
		time.Sleep(idle - time.Millisecond) // the bubble's clock; the Idle timer is the subject
		synctest.Wait()
		if got := sched.claims.Load(); got != 1 {
			t.Fatalf("%d claims within the %s Idle cap with nothing on the schedule, want 1", got, idle)
		}
		if err := rec.Tighten(ctx, time.Now(), "missed_webhook"); err != nil {
			t.Fatal(err)
		}
		// At once: no time passes between Tighten and the claim.
		synctest.Wait()
		if got := sched.claims.Load(); got != 2 {
			t.Fatalf("%d claims after Tighten, want 2", got)
		}
	})
}

// rescheduler is a Syncer whose check of an order, admitted by the
// reconciler's budget, sets its next check as an apply does, on the
// schedule itself (nothing wakes the reconciler), by next, and reports it;
// it counts the checks.
type rescheduler struct {
	sched  ordersync.CheckSchedule
	next   func(code string, checks int64) time.Time
	checks atomic.Int64
}

func (s *rescheduler) CheckOrder(ctx context.Context, account, code string, admit func(context.Context) error) (ordersync.ApplyResult, error) {
	if err := admit(ctx); err != nil {
		return ordersync.ApplyResult{}, err
	}
	n := s.checks.Add(1)
	next := s.next(code, n)
	if err := s.sched.DeferCheck(ctx, account, code, next); err != nil {
		return ordersync.ApplyResult{}, err
	}
	return ordersync.ApplyResult{Applied: true, From: ordersync.StatusPending, Status: ordersync.StatusPending, NextCheck: next}, nil
}

// runReconciler runs rec until the test ends, in the context it returns.
func runReconciler(t *testing.T, rec *worker.Reconciler) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ctx
}

// scheduleOrders puts orders on the schedule of st, due at the times of at.
func scheduleOrders(t *testing.T, st *fake.Store, at ...time.Time) []string {
	t.Helper()
	ctx := context.Background()
	codes := make([]string, len(at))
	for i, due := range at {
		codes[i] = fmt.Sprintf("quiet%02d", i)
		ref := ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: codes[i]}
		if err := st.RecordOrderRef(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if err := st.DeferCheck(ctx, ref.Account, ref.Code, due); err != nil {
			t.Fatal(err)
		}
	}
	return codes
}

// TestReconcilerClaimsOncePerQuietCheck: quiet orders due one at a time
// cost one claim each. The loop used to claim twice more for each, for
// nothing: at once after handing the check over, and on the wake-up the
// check sent when done.
func TestReconcilerClaimsOncePerQuietCheck(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		st := fake.NewStore()
		start := time.Now()
		due := make([]time.Time, n)
		for i := range due {
			// Further apart than the budget's spacing (6 a second), so that
			// each is claimed alone.
			due[i] = start.Add(time.Duration(i+1) * 250 * time.Millisecond)
		}
		scheduleOrders(t, st, due...)
		sched := &claimCounter{CheckSchedule: st}
		checker := &rescheduler{sched: st, next: func(string, int64) time.Time { return time.Now().Add(time.Hour) }}
		rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: sched, Syncer: checker,
			Registerer: prometheus.NewRegistry(), Idle: 30 * time.Second, BacklogInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		runReconciler(t, rec)
		waitFor(t, 20*time.Second, "every order checked", func() bool { return checker.checks.Load() == n })
		// The first claim, the one the start's Tighten woke, and one a check.
		if got := sched.claims.Load(); got > n+2 {
			t.Fatalf("%d claims for %d checks due one at a time, want at most %d", got, n, n+2)
		}
	})
}

// TestReconcilerSleepsUntilASoonerCheck: a check that sets its order's
// next check sooner than the claim loop's sleep (the dense schedule) has
// the loop claim it then, long before the loop's Idle cap.
func TestReconcilerSleepsUntilASoonerCheck(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := fake.NewStore()
		codes := scheduleOrders(t, st, time.Now().Add(time.Hour))
		sched := &claimCounter{CheckSchedule: st, readAfterClaim: make(chan struct{}, 1)}
		checker := &rescheduler{sched: st, next: func(_ string, checks int64) time.Time {
			if checks > 1 {
				return time.Now().Add(time.Hour)
			}
			// Once the loop has read the schedule after claiming this check,
			// it sleeps until the retry (a minute) or its cap (30 s).
			select {
			case <-sched.readAfterClaim:
			case <-time.After(10 * time.Second):
				t.Error("no read of the schedule after the claim")
			}
			return time.Now().Add(300 * time.Millisecond)
		}}
		rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: sched, Syncer: checker,
			Registerer: prometheus.NewRegistry(), Idle: 30 * time.Second, BacklogInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		runReconciler(t, rec)
		// The first claim and the one the start's Tighten woke, and the
		// backlog gauges' first read: only the claim loop reads from now on.
		waitFor(t, 10*time.Second, "the reconciler's start", func() bool { return sched.claims.Load() >= 2 && sched.reads.Load() >= 3 })
		if err := st.PullCheck(context.Background(), ordersync.DefaultAccount, codes[0], time.Now()); err != nil {
			t.Fatal(err)
		}
		rec.Wake()
		// Within a third of the 30 s Idle cap: the check's reschedule woke it.
		waitFor(t, 10*time.Second, "the order's second check", func() bool { return checker.checks.Load() >= 2 })
	})
}

// TestReconcilerReadsTheScheduleOncePerIdle: the checks of one claim cost
// one read of the schedule, when the claim loop goes to sleep after it,
// not one more per check (each check reports its order's next check), and
// the one that reports a sooner check still wakes the loop then.
func TestReconcilerReadsTheScheduleOncePerIdle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Fewer than a claim asks for (8), so that one claim takes them all.
		const n = 6
		st := fake.NewStore()
		sched := &claimCounter{CheckSchedule: st, readAfterClaim: make(chan struct{}, 1)}
		checker := &rescheduler{sched: st, next: func(_ string, checks int64) time.Time {
			if checks == n {
				// Far sooner than the loop's sleep: the claimed checks' retry
				// (a minute) or its cap (30 s).
				return time.Now().Add(300 * time.Millisecond)
			}
			return time.Now().Add(time.Hour)
		}}
		rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: sched, Syncer: checker,
			Registerer: prometheus.NewRegistry(), Idle: 30 * time.Second, BacklogInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		runReconciler(t, rec)
		// The orders come once the start is over (the backlog loop's first
		// read and the claim loop's, which sleeps), so that no read of the
		// start falls between the claims, and the start hurries none of them.
		waitFor(t, 10*time.Second, "the reconciler's start", func() bool { return sched.reads.Load() >= 2 })
		scheduleOrders(t, st, slices.Repeat([]time.Time{time.Now().Add(time.Second)}, n)...)
		rec.Wake()
		afterClaim := func(what string) int64 {
			t.Helper()
			select {
			case <-sched.readAfterClaim:
			case <-time.After(10 * time.Second):
				t.Fatalf("no read of the schedule after %s", what)
			}
			return sched.reads.Load()
		}
		first := afterClaim("the claim of the due checks")
		// The budget (6 a second) spaces the checks, so that a loop that read
		// the schedule after each check would read it once per check.
		second := afterClaim("the claim of the check reported sooner")
		// Within a third of the 30 s Idle cap: the check's report woke it.
		waitFor(t, 10*time.Second, "the sooner check", func() bool { return checker.checks.Load() == n+1 })
		// Only the read after the second claim, none for the checks between.
		if got := second - first; got != 1 {
			t.Errorf("%d reads of the schedule between two claims %d checks apart, want 1", got, n)
		}
	})
}

// fixedBacklog is a schedule with checks overdue that are never claimed.
type fixedBacklog struct {
	ordersync.CheckSchedule
	backlog ordersync.CheckBacklog
}

func (f fixedBacklog) ClaimDueChecks(context.Context, string, time.Time, int, time.Time) ([]ordersync.DueCheck, error) {
	return nil, nil
}

func (f fixedBacklog) CheckBacklog(context.Context, string, time.Time) (ordersync.CheckBacklog, error) {
	return f.backlog, nil
}

// TestReconcilerGaugesResetWhenRunEnds: Run ends when the process loses the
// reconciler's lease; its backlog gauges go to 0 then, so a standby does not
// report the backlog it saw as leader (and fire ReconcileBehind) after a
// failover.
func TestReconcilerGaugesResetWhenRunEnds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	sched := fixedBacklog{CheckSchedule: fake.NewStore(),
		backlog: ordersync.CheckBacklog{Due: 7, Oldest: now.Add(-10 * time.Minute), Next: now.Add(-10 * time.Minute)}}
	reg := prometheus.NewRegistry()
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: sched, Syncer: noChecks{}, Registerer: reg,
		Idle: 30 * time.Second, BacklogInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	waitFor(t, 5*time.Second, "the leader's backlog gauges", func() bool {
		return counterValue(t, reg, "ordersync_reconcile_due_orders", nil) == 7 &&
			counterValue(t, reg, "ordersync_reconcile_overdue_seconds", nil) >= 600
	})
	cancel() // the lease is lost
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ordersync_reconcile_due_orders", "ordersync_reconcile_overdue_seconds"} {
		if v := counterValue(t, reg, name, nil); v != 0 {
			t.Errorf("%s = %v after Run ended, want 0", name, v)
		}
	}
}

// TestHurryIsPaidOnTopOfTheBudget: a hurry's checks are paid for on top of
// the budget, as many more over its minute as orders it hurried, so the
// checks the schedule brings due meanwhile are not held behind them; after
// the minute the budget is the whole again. 120 orders hurried by the
// start are checked at 8 a second, within 16 s (20 s at the budget of 6);
// their next checks, due together 90 s after the start, at 6 a second.
func TestHurryIsPaidOnTopOfTheBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 120
		st := fake.NewStore()
		start := time.Now()
		scheduleOrders(t, st, slices.Repeat([]time.Time{start.Add(time.Hour)}, n)...)
		checker := &rescheduler{sched: st, next: func(_ string, checks int64) time.Time {
			if checks <= n {
				return start.Add(90 * time.Second)
			}
			return start.Add(2 * time.Hour)
		}}
		rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: st, Syncer: checker,
			Registerer: prometheus.NewRegistry(), BacklogInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		runReconciler(t, rec)
		// The bubble's clock, costing no wall time: the budget's own
		// timer is the subject.
		time.Sleep(16 * time.Second)
		if got := checker.checks.Load(); got != n {
			t.Fatalf("%d of %d hurried orders checked 16 s after the start, want all: at the budget's 6 a second and 2 more for the hurry", got, n)
		}
		time.Sleep(90*time.Second - time.Since(start) + 10*time.Second)
		if got := checker.checks.Load() - n; got > 61 {
			t.Errorf("%d checks in the 10 s after %d came due together, a minute after the hurry; want at most 61, the budget's 6 a second", got, n)
		}
	})
}
