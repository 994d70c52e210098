package worker

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// budgetRecovery is how long the reconciler takes to climb back to its
// whole budget after halving it on a 429.
const budgetRecovery = 5 * time.Minute

// admit waits for the budget (see fitBudget).
func (r *Reconciler) admit(ctx context.Context) error {
	r.fitBudget(false)
	return r.budget.Wait(ctx)
}

// fitBudget fits the budget to the upstream's 429s: a check that still got
// a 429 after its retries halves it (down to an eighth), and it climbs back
// to the whole budget over budgetRecovery. A single 429 the retries got
// past is no limit reached, and every request waits at the Retry-After
// gate anyway; a check refused to the end says the reconciler takes too
// much of the account's limit, so it backs off before the webhook-driven
// fetches feel it again.
func (r *Reconciler) fitBudget(refused bool) {
	r.limitMu.Lock()
	defer r.limitMu.Unlock()
	now := time.Now()
	limit := float64(r.budget.Limit())
	whole := r.cfg.Budget
	if now.Before(r.hurryUntil) {
		whole += r.hurryExtra
	}
	switch {
	case refused:
		limit = max(limit/2, r.cfg.Budget/8)
		r.cfg.Logger.Info("the upstream answered 429 to a check: reconciler budget halved", "budget_rps", limit)
	case limit < whole:
		limit = min(whole, limit+r.cfg.Budget*now.Sub(r.adjustedAt).Seconds()/budgetRecovery.Seconds())
	default:
		limit = whole
	}
	r.setBudget(now, limit)
}

// setBudget puts limit in use; limitMu is held.
func (r *Reconciler) setBudget(now time.Time, limit float64) {
	r.adjustedAt = now
	if limit != float64(r.budget.Limit()) {
		r.budget.SetLimitAt(now, rate.Limit(limit))
		r.budgetGauge.Set(limit)
	}
}

// allowHurry pays for a hurry of n orders on top of the budget: n checks
// more over hurryWithin, so the hurried checks do not delay the checks the
// schedule brings due meanwhile. At most hurryLimit orders (3 a second
// more at the default budget, under the 10 a second assumed allowed a
// merchant), for hurryWithin; nothing while the budget is backing off
// from the upstream's 429s.
func (r *Reconciler) allowHurry(n int) {
	r.limitMu.Lock()
	defer r.limitMu.Unlock()
	now := time.Now()
	r.hurryExtra = float64(n) / hurryWithin.Seconds()
	r.hurryUntil = now.Add(hurryWithin)
	if limit := float64(r.budget.Limit()); limit >= r.cfg.Budget {
		r.setBudget(now, r.cfg.Budget+r.hurryExtra)
	}
}
