package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Check outcomes, the label values of ordersync_reconcile_checks_total.
const (
	checkUnchanged = "unchanged"
	checkChanged   = "changed"
	checkFailed    = "failed"
)

// ReconcileChange is one order a check found different from the mirror.
type ReconcileChange struct {
	OrderCode string
	From, To  ordersync.Status
}

// ReconcileCheck is one check due by the schedule: the order and why.
type ReconcileCheck struct {
	OrderCode string
	Reason    ordersync.CheckReason
}

// ReconcileReport is what a set of checks did.
type ReconcileReport struct {
	Candidates int
	Fetched    int
	Unchanged  int
	Changed    []ReconcileChange
	Failed     int
	// Scheduled are the checks due by the schedule, with why each was
	// due, in no particular order; RunOnce's checks are not among them.
	Scheduled []ReconcileCheck
	// FirstError is the first failure, for the caller to show.
	FirstError error
}

// CheckDue makes, now, up to limit of the checks due at now, most overdue
// first, Concurrency at a time, outside the budget (the caller paces), and
// reports what changed. Run is the scheduled way; this is for a caller that
// keeps its own time, such as a simulation of the schedule.
func (r *Reconciler) CheckDue(ctx context.Context, now time.Time, limit int) (ReconcileReport, error) {
	due, err := r.cfg.Schedule.ClaimDueChecks(ctx, r.cfg.Account, now, limit, now.Add(r.cfg.RetryDelay))
	if err != nil {
		return ReconcileReport{}, err
	}
	return r.checkAll(ctx, due, func(context.Context) error { return nil }, nil)
}

// reasonOf says why a claimed check is due: catch-up after the receivers
// were away, else the schedule's rule (ordersync.DueReason), which knows
// the account's evidence of lost webhooks.
func (r *Reconciler) reasonOf(c ordersync.DueCheck) ordersync.CheckReason {
	r.ev.mu.Lock()
	caughtUp := r.ev.catchUp[c.Code]
	delete(r.ev.catchUp, c.Code)
	r.ev.mu.Unlock()
	if caughtUp {
		return ordersync.CheckCatchUp
	}
	if reason := ordersync.DueReason(c.State, r.cfg.Clock()); reason != "" {
		return reason
	}
	return ordersync.CheckQuiet
}

// RunOnce checks, now, the orders filter selects (at most 10,000 unless
// filter.Limit says otherwise), Concurrency at a time, and reports what
// changed: `ordersync reconcile`. The budget does not apply; the upstream
// rate limit and gates do. progress, when not nil, is called with the
// report so far after each check, one call at a time.
func (r *Reconciler) RunOnce(ctx context.Context, filter ordersync.ReconcileFilter, progress func(ReconcileReport)) (ReconcileReport, error) {
	if r.cfg.Source == nil {
		return ReconcileReport{}, errors.New("reconciler: no Source to list orders from")
	}
	if filter.Limit <= 0 {
		filter.Limit = 10000
	}
	if filter.Account == "" {
		filter.Account = r.cfg.Account
	}
	refs, err := r.cfg.Source.ListReconcileCandidates(ctx, filter)
	if err != nil {
		return ReconcileReport{}, err
	}
	due := make([]ordersync.DueCheck, len(refs))
	for i, ref := range refs {
		due[i] = ordersync.DueCheck{OrderRef: ref}
	}
	return r.checkAll(ctx, due, func(context.Context) error { return nil }, progress)
}

// checkAll checks the orders of due; those with a due time (claimed from
// the schedule) are reported with their reason.
func (r *Reconciler) checkAll(ctx context.Context, due []ordersync.DueCheck, admit func(context.Context) error, progress func(ReconcileReport)) (ReconcileReport, error) {
	rep := ReconcileReport{Candidates: len(due)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.cfg.Concurrency)
	for _, c := range due {
		var reason ordersync.CheckReason
		if !c.Due.IsZero() {
			reason = r.reasonOf(c)
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return rep, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.check(ctx, c, reason, admit, &rep, &mu, progress)
		})
	}
	wg.Wait()
	return rep, nil
}

// afterCheck takes a change the check found as evidence of lost webhooks.
// The orders it may concern then stay dense by the mirror's record: the
// store sets their next checks from it.
func (r *Reconciler) afterCheck(ctx context.Context, res ordersync.ApplyResult) {
	if res.Applied && res.From != "" && res.From != res.Status {
		if err := r.Tighten(ctx, r.cfg.Clock(), evidenceMissedWebhook); err != nil {
			r.cfg.Logger.Error("tighten the schedule on a missed webhook", "err", err)
		}
	}
}

// check fetches one order, due for reason ("" when not due by the
// schedule), adds the outcome to rep and returns the order's next check as
// the check's apply set it: zero when it failed or set none.
func (r *Reconciler) check(ctx context.Context, c ordersync.DueCheck, reason ordersync.CheckReason, admit func(context.Context) error, rep *ReconcileReport, mu *sync.Mutex, progress func(ReconcileReport)) time.Time {
	ref := c.OrderRef
	if reason != "" {
		requests := r.requests.WithLabelValues(string(reason))
		wait := admit
		admit = func(ctx context.Context) error {
			if err := wait(ctx); err != nil {
				return err
			}
			requests.Inc()
			return nil
		}
	}
	res, err := r.cfg.Syncer.CheckOrder(ctx, ref.Account, ref.Code, admit)
	if ordersync.UpstreamErrorKindOf(err) == ordersync.UpstreamRateLimited {
		r.fitBudget(true)
	}
	if reason != "" && err == nil && ctx.Err() == nil {
		r.afterCheck(ctx, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if reason != "" {
		rep.Scheduled = append(rep.Scheduled, ReconcileCheck{OrderCode: ref.Code, Reason: reason})
	}
	if progress != nil {
		defer func() { progress(*rep) }()
	}
	switch {
	case err != nil:
		rep.Failed++
		if rep.FirstError == nil {
			rep.FirstError = err
		}
		if ctx.Err() != nil {
			break
		}
		r.checks.WithLabelValues(checkFailed).Inc()
		if IsPermanent(err) && r.cfg.Schedule != nil {
			// The service will answer the same (an order it does not
			// know): asking again in a minute, as after a transient
			// failure, would spend the budget on it for ever.
			if derr := r.cfg.Schedule.DeferCheck(ctx, ref.Account, ref.Code, r.cfg.Clock().Add(ordersync.CheckMaxInterval)); derr != nil {
				r.cfg.Logger.Error("defer the check of an order the service refuses", "order_code", ref.Code, "err", derr)
			}
		}
	case res.Applied && res.From != "" && res.From != res.Status:
		rep.Fetched++
		rep.Changed = append(rep.Changed, ReconcileChange{OrderCode: ref.Code, From: res.From, To: res.Status})
		r.checks.WithLabelValues(checkChanged).Inc()
		if r.cfg.OnDrift != nil {
			r.cfg.OnDrift(driftMissedWebhook)
		}
		r.cfg.Logger.Info("reconcile found a status change no webhook announced", "order_code", ref.Code, "from", res.From, "to", res.Status)
	default:
		rep.Fetched++
		rep.Unchanged++
		r.checks.WithLabelValues(checkUnchanged).Inc()
	}
	if err != nil {
		return time.Time{}
	}
	return res.NextCheck
}
