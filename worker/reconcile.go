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
	"github.com/ordersync/ordersync/internal/quietlog"
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
	// Idle is the longest the reconciler sleeps when no check is due. It
	// sleeps until the earliest check on the schedule, and wakes at once
	// when this process brings a check forward (Tighten, Wake); each check
	// it makes reports its order's next check, and it wakes then if that
	// is sooner (the dense schedule), without reading the schedule. A
	// check that another process brings forward is found within Idle: the
	// dense schedule's checks that a webhook's fetch sets 15 s ahead are
	// among them. Default 5s.
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
// requests per second: below the 10 a second assumed allowed a merchant,
// so that the checks alone never fill it, and above what the even spacing
// of 1,000 active orders and 6,000 quiet ones needs, with room for the
// dense schedule that evidence of lost webhooks calls for. The checks
// spend it only while no other fetch waits for the upstream.
// docs/reconciler.md explains the figures.
const DefaultReconcileBudget = 6

// DefaultUpstreamRPS is upstream_rps's default: no fixed cap on the
// requests of an account in a process. The rate is learned instead: the
// upstream's 429s lower it for every request, webhook-driven fetches
// included, and it climbs back step by step (SyncerConfig.RateRecovery),
// while the checks keep to their own budget and give way to the other
// fetches. A fixed cap throttled the merchant's own traffic at a limit
// nobody had measured (docs/reconciler.md).
const DefaultUpstreamRPS = 0

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
		c.Idle = 5 * time.Second
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

// Reconciler checks orders that can still change when the schedule says
// they are due, so the mirror converges even when a webhook never arrives.
type Reconciler struct {
	cfg    ReconcilerConfig
	budget *rate.Limiter
	// quiet logs failed checks, which repeat per order through an outage
	// of the mirror, once and then summed up.
	quiet *quietlog.Log
	*reconcilerMetrics
	ev evidence
	// wake tells a sleeping Run that a check may be due sooner (Wake):
	// it claims at once.
	wake chan struct{}
	// reported carries to a sleeping Run the earliest next check that the
	// checks it made set: it wakes then if that is sooner.
	reported *nextDue
	// limitMu guards the budget in use (fitBudget) and the hurry's
	// allowance on top of it (allowHurry).
	limitMu    sync.Mutex
	adjustedAt time.Time
	hurryExtra float64
	hurryUntil time.Time
}

// reconcilerMetrics are the reconciler's collectors.
type reconcilerMetrics struct {
	// checks counts checks by outcome; due and overdue are the backlog.
	checks  *prometheus.CounterVec
	due     prometheus.Gauge
	overdue prometheus.Gauge
	// requests counts the upstream requests of due checks by why they
	// were due; evidenceSeen the evidence of lost webhooks by kind.
	requests     *prometheus.CounterVec
	evidenceSeen *prometheus.CounterVec
	budgetGauge  prometheus.Gauge
}

func newReconcilerMetrics(reg prometheus.Registerer) (*reconcilerMetrics, error) {
	m := &reconcilerMetrics{
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
			Help: "Evidence that webhooks were lost, which tightens the schedule, by kind (missed_webhook, receiver_away, receiver_unavailable, all_refused, reconciler_start, late_webhook).",
		}, []string{"kind"}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.checks), collect.Of(&m.due), collect.Of(&m.overdue),
		collect.Of(&m.requests), collect.Of(&m.budgetGauge), collect.Of(&m.evidenceSeen)); err != nil {
		return nil, err
	}
	// Every label value exists from the start, so alerts on increase() see
	// the first one and dashboards show zero rather than nothing.
	for _, o := range []string{checkUnchanged, checkChanged, checkFailed} {
		m.checks.WithLabelValues(o)
	}
	for _, reason := range ordersync.CheckReasons {
		m.requests.WithLabelValues(string(reason))
	}
	for _, k := range evidenceKinds {
		m.evidenceSeen.WithLabelValues(k)
	}
	return m, nil
}

// NewReconciler returns a reconciler.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newReconcilerMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new reconciler: %w", err)
	}
	m.budgetGauge.Set(cfg.Budget)
	r := &Reconciler{
		cfg:   cfg,
		quiet: quietlog.New(cfg.Logger, quietlog.DefaultInterval),
		// A burst of one: the budget holds over any window, not only on
		// average.
		budget:            rate.NewLimiter(rate.Limit(cfg.Budget), 1),
		reconcilerMetrics: m,
		wake:              make(chan struct{}, 1),
		reported:          &nextDue{set: make(chan struct{}, 1)},
	}
	if cfg.Schedule != nil {
		r.cfg.Schedule = wakingSchedule{cfg.Schedule, r.Wake}
	}
	return r, nil
}

// Wake tells a sleeping Run that a check may have become due sooner than
// the schedule said when it went to sleep: a caller that brings checks
// forward outside the reconciler calls it.
func (r *Reconciler) Wake() {
	notify(r.wake)
}

// notify signals ch unless a signal is pending already.
func notify(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wakingSchedule wakes the reconciler whenever it brings checks forward,
// so that Tighten and ObserveReceivers wake it whichever way they do.
type wakingSchedule struct {
	ordersync.CheckSchedule
	wake func()
}

func (s wakingSchedule) PullCheck(ctx context.Context, account, code string, at time.Time) error {
	err := s.CheckSchedule.PullCheck(ctx, account, code, at)
	s.wake()
	return err
}

func (s wakingSchedule) PullChecks(ctx context.Context, account string, activeSince, at time.Time, minGap time.Duration, limit int) ([]string, error) {
	codes, err := s.CheckSchedule.PullChecks(ctx, account, activeSince, at, minGap, limit)
	s.wake()
	return codes, err
}

func (s wakingSchedule) TightenChecks(ctx context.Context, account string, dense ordersync.DenseChecks, now time.Time) (int, error) {
	n, err := s.CheckSchedule.TightenChecks(ctx, account, dense, now)
	s.wake()
	return n, err
}
