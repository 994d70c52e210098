package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync"
	collect "github.com/ordersync/ordersync/metrics"
)

// orderChecker fetches an order as a reconciler's check (Syncer.CheckOrder).
type orderChecker interface {
	CheckOrder(ctx context.Context, account, code string, admit func(ctx context.Context) error) (ordersync.ApplyResult, error)
}

// ReconcilerConfig configures the reconciler.
type ReconcilerConfig struct {
	// Schedule is where each order's next check is due.
	Schedule ordersync.CheckSchedule
	// Source lists the orders of an on-demand reconcile (RunOnce).
	Source ordersync.ReconcileSource
	Syncer orderChecker
	// Account is the account whose orders the reconciler checks.
	Account string
	// Budget is the most upstream requests per second the reconciler
	// sends, retries included. It is a cap, not a load: only checks that
	// are due are made. Default DefaultReconcileBudget.
	Budget float64
	// Concurrency is how many checks run at once. Default 8.
	Concurrency int
	// RetryDelay is how long a check that failed waits before it is tried
	// again. Default 1m.
	RetryDelay time.Duration
	// Idle is how long the reconciler waits before it looks again when no
	// check is due. Default 1s.
	Idle time.Duration
	// BacklogInterval is how often the backlog gauges are read from the
	// schedule. Default 5s.
	BacklogInterval time.Duration
	// Heartbeats, when set, are the receivers' heartbeats: a gap in their
	// uptime, 503 answers or every webhook refused is evidence that
	// webhooks were lost (ObserveReceivers).
	Heartbeats ordersync.ReceiverHeartbeats
	// HeartbeatInterval is how often receivers beat; three without a beat
	// count as away. Default ordersync.DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// EvidenceWindow: on evidence of lost webhooks, the open orders active
	// within it are checked densely. Default DefaultEvidenceWindow.
	EvidenceWindow time.Duration
	// EvidenceHold is how long the record must stay clean before the
	// schedule relaxes. Default DefaultEvidenceHold.
	EvidenceHold time.Duration
	// OnDrift is called for each order whose status a check found changed:
	// a webhook that never arrived (kind missed_webhook).
	OnDrift    func(kind string)
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Clock says when checks are due; default time.Now. The budget and
	// the waits use real time.
	Clock func() time.Time
}

// DefaultReconcileBudget is the reconciler's default budget in upstream
// requests per second. The even spacing of a clean account spends far
// below it; it is sized for the dense schedule that evidence of lost
// webhooks calls for, which must be affordable when the evidence comes.
// docs/reconciler.md explains the figures.
const DefaultReconcileBudget = 20

// DefaultUpstreamRPS is the recommended cap on every upstream request of
// an account (webhook-driven fetches, checks, the admin API): 80% of the 10
// requests a second assumed allowed, leaving room for the merchant's other
// uses of the same key. Not yet upstream_rps's default: docs/reconciler.md.
const DefaultUpstreamRPS = 8

// budgetRecovery is how long the reconciler takes to climb back to its
// whole budget after halving it on a 429.
const budgetRecovery = 5 * time.Minute

func (c ReconcilerConfig) withDefaults() ReconcilerConfig {
	if c.Account == "" {
		c.Account = ordersync.DefaultAccount
	}
	if c.Budget == 0 {
		c.Budget = DefaultReconcileBudget
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = time.Minute
	}
	if c.Idle == 0 {
		c.Idle = time.Second
	}
	if c.BacklogInterval == 0 {
		c.BacklogInterval = 5 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = ordersync.DefaultHeartbeatInterval
	}
	if c.EvidenceWindow == 0 {
		c.EvidenceWindow = DefaultEvidenceWindow
	}
	if c.EvidenceHold == 0 {
		c.EvidenceHold = DefaultEvidenceHold
	}
	defaultDeps(&c.Registerer, &c.Logger, &c.Clock)
	return c
}

func (c ReconcilerConfig) validate() error {
	switch {
	case c.Syncer == nil:
		return errors.New("worker: ReconcilerConfig.Syncer is required")
	case c.Schedule == nil && c.Source == nil:
		return errors.New("worker: ReconcilerConfig.Schedule or Source is required")
	case !(c.Budget > 0) || math.IsInf(c.Budget, 0):
		return fmt.Errorf("worker: ReconcilerConfig.Budget must be a finite number > 0, got %v", c.Budget)
	case c.Concurrency < 1:
		return fmt.Errorf("worker: ReconcilerConfig.Concurrency must be ≥ 1, got %d", c.Concurrency)
	case c.HeartbeatInterval < 0 || c.EvidenceWindow < 0 || c.EvidenceHold < 0:
		return fmt.Errorf("worker: ReconcilerConfig.HeartbeatInterval, EvidenceWindow and EvidenceHold must be > 0, got %v, %v, %v", c.HeartbeatInterval, c.EvidenceWindow, c.EvidenceHold)
	case c.RetryDelay < 0 || c.Idle < 0 || c.BacklogInterval < 0:
		return fmt.Errorf("worker: ReconcilerConfig.RetryDelay, Idle and BacklogInterval must be > 0, got %v, %v, %v", c.RetryDelay, c.Idle, c.BacklogInterval)
	}
	return nil
}

// Check outcomes, the label values of ordersync_reconcile_checks_total.
const (
	checkUnchanged = "unchanged"
	checkChanged   = "changed"
	checkFailed    = "failed"
)

// Reconciler checks orders that can still change when the schedule says
// they are due, so the mirror converges even when a webhook never arrives.
type Reconciler struct {
	cfg    ReconcilerConfig
	budget *rate.Limiter
	// checks counts checks by outcome; due and overdue are the backlog.
	checks  *prometheus.CounterVec
	due     prometheus.Gauge
	overdue prometheus.Gauge
	// requests counts the upstream requests of due checks by why they
	// were due; evidenceSeen the evidence of lost webhooks by kind.
	requests     *prometheus.CounterVec
	evidenceSeen *prometheus.CounterVec
	ev           evidence
	// limitMu guards the budget in use (fitBudget).
	limitMu     sync.Mutex
	adjustedAt  time.Time
	budgetGauge prometheus.Gauge
}

// ReconcileChange is one order a check found different from the mirror.
type ReconcileChange struct {
	OrderCode string
	From, To  ordersync.Status
}

// ReconcileReport is what a set of checks did.
type ReconcileReport struct {
	Candidates int
	Fetched    int
	Unchanged  int
	Changed    []ReconcileChange
	Failed     int
	// ByReason counts the checks by why they were due; checks not due by
	// the schedule (RunOnce) are not counted.
	ByReason map[ordersync.CheckReason]int
	// FirstError is the first failure, for the caller to show.
	FirstError error
}

// NewReconciler returns a reconciler.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{
		cfg: cfg,
		// A burst of one: the budget holds over any window, not only on
		// average.
		budget: rate.NewLimiter(rate.Limit(cfg.Budget), 1),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_reconcile_checks_total",
			Help: "Orders the reconciler checked (re-fetched), by outcome (unchanged, changed, failed).",
		}, []string{"outcome"}),
		due: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_reconcile_due_orders",
			Help: "Orders whose reconcile check is due and not yet made.",
		}),
		overdue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_reconcile_overdue_seconds",
			Help: "How long the most overdue reconcile check has been due; 0 when none is.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_reconcile_requests_total",
			Help: "Upstream requests of the reconciler's due checks, retries included, by why the check was due (active, quiet, payment_in_flight, expiry, evidence, catch_up).",
		}, []string{"reason"}),
		budgetGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_reconcile_budget_rps",
			Help: "The reconciler's budget in use: reconcile_rps, halved on each 429 from the upstream and climbing back over 5 minutes.",
		}),
		evidenceSeen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_reconcile_evidence_total",
			Help: "Evidence that webhooks were lost, which tightens the schedule, by kind (missed_webhook, receiver_away, receiver_unavailable, all_refused, reconciler_start).",
		}, []string{"kind"}),
	}
	var err error
	if r.checks, err = collect.Register(cfg.Registerer, r.checks); err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	for _, o := range []string{checkUnchanged, checkChanged, checkFailed} {
		r.checks.WithLabelValues(o)
	}
	if r.requests, err = collect.Register(cfg.Registerer, r.requests); err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	for _, reason := range ordersync.CheckReasons {
		r.requests.WithLabelValues(string(reason))
	}
	if r.evidenceSeen, err = collect.Register(cfg.Registerer, r.evidenceSeen); err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	for _, k := range evidenceKinds {
		r.evidenceSeen.WithLabelValues(k)
	}
	if r.budgetGauge, err = collect.Register(cfg.Registerer, r.budgetGauge); err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	r.budgetGauge.Set(cfg.Budget)
	if r.due, err = collect.Register(cfg.Registerer, r.due); err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	if r.overdue, err = collect.Register(cfg.Registerer, r.overdue); err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	return r, nil
}

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
	work := make(chan ordersync.DueCheck)
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Go(func() {
			for c := range work {
				var rep ReconcileReport
				r.check(ctx, c, r.reasonOf(c), r.admit, &rep, &sync.Mutex{}, nil)
				switch {
				case rep.Failed == 0 || ctx.Err() != nil:
				case IsOutage(rep.FirstError):
					// The Syncer logs the outage once; each check it fails
					// would only repeat it.
					r.cfg.Logger.Debug("reconcile check failed in an upstream outage; tried again later", "order_code", c.Code, "retry_in", r.cfg.RetryDelay, "err", rep.FirstError)
				case IsPermanent(rep.FirstError):
					r.cfg.Logger.Warn("reconcile check refused by the service; tried again later", "order_code", c.Code, "retry_in", ordersync.CheckMaxInterval, "err", rep.FirstError)
				default:
					r.cfg.Logger.Warn("reconcile check failed; tried again later", "order_code", c.Code, "retry_in", r.cfg.RetryDelay, "err", rep.FirstError)
				}
			}
		})
	}
	wg.Go(func() { r.backlogLoop(ctx) })
	err := r.claimLoop(ctx, work)
	close(work)
	wg.Wait()
	return err
}

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

// claimLoop hands due checks to the workers. It claims about a second of
// the budget at a time, so that a check claimed and not yet made when the
// process dies is due again after RetryDelay, not much later.
func (r *Reconciler) claimLoop(ctx context.Context, work chan<- ordersync.DueCheck) error {
	batch := max(r.cfg.Concurrency, int(math.Ceil(r.cfg.Budget)))
	for ctx.Err() == nil {
		now := r.cfg.Clock()
		due, err := r.cfg.Schedule.ClaimDueChecks(ctx, r.cfg.Account, now, batch, now.Add(r.cfg.RetryDelay))
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Error("claim due reconcile checks", "err", err)
			}
			_ = sleep(ctx, r.cfg.Idle)
			continue
		}
		if len(due) == 0 {
			_ = sleep(ctx, r.cfg.Idle)
			continue
		}
		for _, c := range due {
			select {
			case work <- c:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
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
// the schedule) are counted by reason.
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
// schedule), and adds the outcome to rep.
func (r *Reconciler) check(ctx context.Context, c ordersync.DueCheck, reason ordersync.CheckReason, admit func(context.Context) error, rep *ReconcileReport, mu *sync.Mutex, progress func(ReconcileReport)) {
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
		if rep.ByReason == nil {
			rep.ByReason = map[ordersync.CheckReason]int{}
		}
		rep.ByReason[reason]++
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
}
