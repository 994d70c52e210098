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
	if refused {
		limit = max(limit/2, r.cfg.Budget/8)
		r.cfg.Logger.Info("the upstream answered 429 to a check: reconciler budget halved", "budget_rps", limit)
	} else if limit < r.cfg.Budget {
		limit = min(r.cfg.Budget, limit+r.cfg.Budget*now.Sub(r.adjustedAt).Seconds()/budgetRecovery.Seconds())
	}
	r.adjustedAt = now
	if limit != float64(r.budget.Limit()) {
		r.budget.SetLimitAt(now, rate.Limit(limit))
		r.budgetGauge.Set(limit)
	}
}
