package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// ReconcilerConfig configures the reconciler.
type ReconcilerConfig struct {
	Source ordersync.ReconcileSource
	Syncer orderSyncer
	// Account is the account whose orders a periodic pass re-fetches.
	Account string
	// Interval between periodic passes. Default 1m.
	Interval time.Duration
	// Budget is the most orders one pass re-fetches: the reconciler's share
	// of the upstream, so it never starves webhook work. Default 200.
	Budget int
	// Concurrency is how many of its fetches run at once. Default 4.
	Concurrency int
	// MinAge skips orders synced more recently than this. Default Interval.
	MinAge time.Duration
	// OnDrift is called for each order whose status a pass found changed:
	// a webhook that never arrived (kind missed_webhook).
	OnDrift    func(kind string)
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Clock      func() time.Time
}

func (c ReconcilerConfig) withDefaults() ReconcilerConfig {
	if c.Account == "" {
		c.Account = ordersync.DefaultAccount
	}
	if c.Interval <= 0 {
		c.Interval = time.Minute
	}
	if c.Budget <= 0 {
		c.Budget = 200
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.MinAge <= 0 {
		c.MinAge = c.Interval
	}
	defaultDeps(&c.Registerer, &c.Logger, &c.Clock)
	return c
}

// Reconciler re-fetches orders that can still change, so the mirror
// converges even when a webhook never arrives.
type Reconciler struct {
	cfg     ReconcilerConfig
	fetched *prometheus.CounterVec
	passes  prometheus.Counter
}

// ReconcileChange is one order a pass found different from the mirror.
type ReconcileChange struct {
	OrderCode string
	From, To  ordersync.Status
}

// ReconcileReport is what one pass did.
type ReconcileReport struct {
	Candidates int
	Fetched    int
	Unchanged  int
	Changed    []ReconcileChange
	Failed     int
	// FirstError is the first failure, for the caller to show.
	FirstError error
}

// NewReconciler returns a reconciler.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	cfg = cfg.withDefaults()
	if cfg.Source == nil || cfg.Syncer == nil {
		return nil, errors.New("worker: ReconcilerConfig.Source and Syncer are required")
	}
	r := &Reconciler{
		cfg: cfg,
		fetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_reconcile_orders_total",
			Help: "Orders the reconciler re-fetched, by result (unchanged, changed, failed).",
		}, []string{"result"}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_reconcile_passes_total",
			Help: "Reconciler passes run.",
		}),
	}
	for _, c := range []prometheus.Collector{r.fetched, r.passes} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// candidates spends half the pass's budget by priority (links near expiry,
// recently active orders) and the rest on the orders synced longest ago, so
// a quiet order whose webhook was lost is reached within a bounded number
// of passes however busy the others are.
func (r *Reconciler) candidates(ctx context.Context, filter ordersync.ReconcileFilter) ([]ordersync.OrderRef, error) {
	limit := filter.Limit
	byPriority := filter
	byPriority.Stalest, byPriority.Limit = false, (limit+1)/2
	refs, err := r.cfg.Source.ListReconcileCandidates(ctx, byPriority)
	if err != nil {
		return nil, err
	}
	stalest := filter
	stalest.Stalest, stalest.Limit = true, limit
	more, err := r.cfg.Source.ListReconcileCandidates(ctx, stalest)
	if err != nil {
		return nil, err
	}
	seen := make(map[[2]string]bool, len(refs))
	for _, ref := range refs {
		seen[[2]string{ref.Account, ref.Code}] = true
	}
	for _, ref := range more {
		if len(refs) >= limit {
			break
		}
		if k := [2]string{ref.Account, ref.Code}; !seen[k] {
			seen[k] = true
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

// Run makes a pass every Interval until ctx is cancelled.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rep, err := r.RunOnce(ctx, ordersync.ReconcileFilter{
			Account:      r.cfg.Account,
			SyncedBefore: r.cfg.Clock().Add(-r.cfg.MinAge),
		})
		switch {
		case err != nil && ctx.Err() == nil:
			r.cfg.Logger.Error("reconcile pass", "err", err)
		case rep.Failed > 0 && ctx.Err() == nil:
			r.cfg.Logger.Warn("reconcile pass had failures", "failed", rep.Failed, "fetched", rep.Fetched, "first_err", rep.FirstError)
		case len(rep.Changed) > 0:
			r.cfg.Logger.Info("reconcile pass found missed changes", "changed", len(rep.Changed), "fetched", rep.Fetched)
		}
	}
}

// RunOnce re-fetches the orders filter selects, at most Budget of them
// unless filter.Limit says otherwise, and reports what changed.
func (r *Reconciler) RunOnce(ctx context.Context, filter ordersync.ReconcileFilter) (ReconcileReport, error) {
	r.passes.Inc()
	if filter.Limit <= 0 {
		filter.Limit = r.cfg.Budget
	}
	if filter.Account == "" {
		filter.Account = r.cfg.Account
	}
	refs, err := r.candidates(ctx, filter)
	if err != nil {
		return ReconcileReport{}, err
	}
	rep := ReconcileReport{Candidates: len(refs)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.cfg.Concurrency)
	for _, ref := range refs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return rep, ctx.Err()
		}
		wg.Add(1)
		go func(ref ordersync.OrderRef) {
			defer func() { <-sem; wg.Done() }()
			res, err := r.cfg.Syncer.SyncOrder(ctx, ref.Account, ref.Code, ordersync.CauseReconcile)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				rep.Failed++
				if rep.FirstError == nil {
					rep.FirstError = err
				}
				r.fetched.WithLabelValues("failed").Inc()
			case res.Applied && res.PreviousStatus != "" && res.PreviousStatus != res.Status:
				rep.Fetched++
				rep.Changed = append(rep.Changed, ReconcileChange{OrderCode: ref.Code, From: res.PreviousStatus, To: res.Status})
				r.fetched.WithLabelValues("changed").Inc()
				if r.cfg.OnDrift != nil {
					r.cfg.OnDrift("missed_webhook")
				}
			default:
				rep.Fetched++
				rep.Unchanged++
				r.fetched.WithLabelValues("unchanged").Inc()
			}
		}(ref)
	}
	wg.Wait()
	return rep, nil
}
