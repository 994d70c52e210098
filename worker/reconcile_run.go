package worker

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Run checks due orders, most overdue first, as fast as the budget allows,
// until ctx is cancelled.
func (r *Reconciler) Run(ctx context.Context) error {
	if r.cfg.Schedule == nil {
		return errors.New("reconciler: no Schedule to run")
	}
	// A reconciler taking over knows nothing of what was lost before: the
	// account is dense until its record has been clean for EvidenceHold.
	if err := r.Tighten(ctx, r.cfg.Clock(), evidenceStart); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("tighten the schedule on start", "err", err)
	}
	// The claim loop claims at once: the wake Tighten left is moot.
	select {
	case <-r.wake:
	default:
	}
	work := make(chan ordersync.DueCheck)
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Go(func() {
			for c := range work {
				var rep ReconcileReport
				// The check set the order's next check, maybe sooner than
				// the claim loop's sleep. A failed one reports none: it
				// left it where the claim put it, which the loop has read.
				r.reported.report(r.check(ctx, c, r.reasonOf(c), r.admit, &rep, &sync.Mutex{}, nil))
				switch {
				case rep.Failed == 0 || ctx.Err() != nil:
				case IsOutage(rep.FirstError):
					// The Syncer logs the outage once; each check it fails
					// would only repeat it.
					r.cfg.Logger.Debug("reconcile check failed in an upstream outage; tried again later", "order_code", c.Code, "retry_in", r.cfg.RetryDelay, "err", rep.FirstError)
				case IsPermanent(rep.FirstError):
					r.quiet.Log(slog.LevelWarn, "refused", "reconcile check refused by the service; tried again later", "order_code", c.Code, "retry_in", ordersync.CheckMaxInterval, "err", rep.FirstError)
				default:
					r.quiet.Log(slog.LevelWarn, "failed", "reconcile check failed; tried again later", "order_code", c.Code, "retry_in", r.cfg.RetryDelay, "err", rep.FirstError)
				}
			}
		})
	}
	wg.Go(func() { r.backlogLoop(ctx) })
	err := r.claimLoop(ctx, work)
	close(work)
	wg.Wait()
	// Run ends when the process loses the reconciler's lease (its context
	// ends): the backlog is the new holder's to report, and a stale value
	// here would keep an alert on this standby firing.
	r.due.Set(0)
	r.overdue.Set(0)
	return err
}

// claimLoop hands due checks to the workers. It claims about a second of
// the budget at a time, so that a check claimed and not yet made when the
// process dies is due again after RetryDelay, not much later. A claim that
// returned less than that took every check due: the loop sleeps until the
// next one rather than claim again for nothing.
func (r *Reconciler) claimLoop(ctx context.Context, work chan<- ordersync.DueCheck) error {
	batch := max(r.cfg.Concurrency, int(math.Ceil(r.cfg.Budget)))
	for ctx.Err() == nil {
		now := r.cfg.Clock()
		due, err := r.cfg.Schedule.ClaimDueChecks(ctx, r.cfg.Account, now, batch, now.Add(r.cfg.RetryDelay))
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Error("claim due reconcile checks", "err", err)
			}
			_ = sleep(ctx, claimRetryWait)
			continue
		}
		for _, c := range due {
			select {
			case work <- c:
			case <-ctx.Done():
				return nil
			}
		}
		if len(due) < batch {
			r.idle(ctx, now)
		}
	}
	return nil
}

// claimRetryWait is how long the claim loop waits after a failed claim.
const claimRetryWait = time.Second

// minIdle keeps the claim loop from spinning when the schedule says a check
// is due that a claim did not return (one another leader holds).
const minIdle = 100 * time.Millisecond

// idle sleeps until the earliest check on the schedule is due, at most
// Idle, or until Wake. A check made sets its order's next check and reports
// it: idle then sleeps until that time if it is sooner (the dense
// schedule), without reading the schedule again or a claim for nothing.
func (r *Reconciler) idle(ctx context.Context, claimedAt time.Time) {
	// A check reported before the read below is in it.
	r.reported.take()
	wait := r.untilDue(ctx, claimedAt)
	until := time.Now().Add(wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-r.wake:
			return
		case <-r.reported.set:
			next := r.reported.take()
			if next.IsZero() {
				continue
			}
			wait := next.Sub(r.cfg.Clock())
			if wait <= 0 {
				return
			}
			if sooner := time.Now().Add(wait); sooner.Before(until) {
				until = sooner
				t.Reset(wait)
			}
		}
	}
}

// nextDue holds the earliest next check that checks reported since the
// claim loop last took it.
type nextDue struct {
	mu sync.Mutex
	at time.Time
	// set is signalled when a check reports a time.
	set chan struct{}
}

// report records at, a check's next check; zero (none) changes nothing.
func (n *nextDue) report(at time.Time) {
	if at.IsZero() {
		return
	}
	n.mu.Lock()
	if n.at.IsZero() || at.Before(n.at) {
		n.at = at
	}
	n.mu.Unlock()
	notify(n.set)
}

// take returns the earliest time reported since the last take, zero if
// none, and forgets it.
func (n *nextDue) take() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	at := n.at
	n.at = time.Time{}
	return at
}

// untilDue is how long the claim loop may sleep: until the earliest check
// on the schedule is due, at most Idle; at least minIdle when a check due
// by claimedAt is there, which that claim did not return.
func (r *Reconciler) untilDue(ctx context.Context, claimedAt time.Time) time.Duration {
	now := r.cfg.Clock()
	b, err := r.cfg.Schedule.CheckBacklog(ctx, r.cfg.Account, now)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("read when the next reconcile check is due", "err", err)
		}
		return min(r.cfg.Idle, claimRetryWait)
	case b.Next.IsZero():
		return r.cfg.Idle
	case !b.Next.After(claimedAt):
		return min(r.cfg.Idle, minIdle)
	}
	return min(r.cfg.Idle, b.Next.Sub(now))
}

// backlogLoop keeps the due and overdue gauges current and reads the
// receivers' heartbeats.
func (r *Reconciler) backlogLoop(ctx context.Context) {
	for {
		if err := r.ObserveBacklog(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("read the reconcile backlog", "err", err)
		}
		if err := r.ObserveReceivers(ctx, r.cfg.Clock()); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("read the receivers' heartbeats", "err", err)
		}
		if sleep(ctx, r.cfg.BacklogInterval) != nil {
			return
		}
	}
}

// ObserveBacklog reads the schedule's backlog into the gauges.
func (r *Reconciler) ObserveBacklog(ctx context.Context) error {
	now := r.cfg.Clock()
	b, err := r.cfg.Schedule.CheckBacklog(ctx, r.cfg.Account, now)
	if err != nil {
		return err
	}
	r.due.Set(float64(b.Due))
	overdue := 0.0
	if !b.Oldest.IsZero() && b.Oldest.Before(now) {
		overdue = now.Sub(b.Oldest).Seconds()
	}
	r.overdue.Set(overdue)
	return nil
}
