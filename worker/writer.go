package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	collect "github.com/ordersync/ordersync/metrics"

	"github.com/ordersync/ordersync"
)

// MirrorWriterConfig configures a MirrorWriter.
type MirrorWriterConfig struct {
	Mirror ordersync.Mirror
	// Registerer receives the mirror's collectors, which label each order
	// with its own account: pass the process's registerer, not one that
	// labels an account. Nil keeps them unregistered.
	Registerer prometheus.Registerer
}

func (c MirrorWriterConfig) validate() error {
	if c.Mirror == nil {
		return errors.New("worker: MirrorWriterConfig.Mirror is required")
	}
	return nil
}

// MirrorWriter applies fetched orders to the mirror for every account a
// process serves: one per process, shared by the pool's group commit and
// every account's Syncer, so a batch that holds several accounts' orders
// counts each under its own account. It also hands out the fetch
// sequence numbers of every account's fetches: one reservation for the
// process, which another account's fetches do not take as another
// process's.
type MirrorWriter struct {
	mirror  ordersync.Mirror
	seqs    *seqAllocator
	metrics *writerMetrics
}

// NewMirrorWriter returns a MirrorWriter.
func NewMirrorWriter(cfg MirrorWriterConfig) (*MirrorWriter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newWriterMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new mirror writer: register metrics: %w", err)
	}
	return &MirrorWriter{mirror: cfg.Mirror, seqs: newSeqAllocator(cfg.Mirror), metrics: m}, nil
}

// Close gives the fetch sequence's lease back, so that the next process
// on the mirror takes numbers at once, after waiting for a reservation in
// flight; the writer hands out no more fetch numbers. Call it when the
// process's fetches have stopped, before closing the mirror.
func (w *MirrorWriter) Close(ctx context.Context) error { return w.seqs.close(ctx) }

// apply writes fetched orders in one mirror transaction and counts what it
// did to each, under the order's account.
func (w *MirrorWriter) apply(ctx context.Context, params []ordersync.ApplyParams) ([]ordersync.ApplyResult, error) {
	start := time.Now()
	results, err := w.mirror.ApplyOrders(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("apply %d orders to the mirror: %w", len(params), err)
	}
	w.metrics.commitDuration.Observe(time.Since(start).Seconds())
	if len(results) != len(params) {
		return nil, fmt.Errorf("apply %d orders to the mirror: got %d results", len(params), len(results))
	}
	for i, r := range results {
		w.metrics.observe(params[i].Account, r)
	}
	return results, nil
}

// writerMetrics are the mirror's collectors, labelled by account.
type writerMetrics struct {
	upserts        *prometheus.CounterVec
	statusChanges  *prometheus.CounterVec
	commitDuration prometheus.Histogram
}

func newWriterMetrics(reg prometheus.Registerer) (*writerMetrics, error) {
	m := &writerMetrics{
		upserts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_mirror_upserts_total",
			Help: "Fetched orders written to the mirror, by account and result (created, changed, unchanged, stale).",
		}, []string{"account", "result"}),
		statusChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_mirror_status_changes_total",
			Help: "Orders the mirror saw enter a status, by account and the new status.",
		}, []string{"account", "status"}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ordersync_mirror_commit_duration_seconds",
			Help:    "Duration of one mirror transaction applying a batch of fetched orders.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.upserts), collect.Of(&m.statusChanges), collect.Of(&m.commitDuration)); err != nil {
		return nil, err
	}
	return m, nil
}

// observe counts what a mirror transaction did to one order of account.
func (m *writerMetrics) observe(account string, r ordersync.ApplyResult) {
	switch {
	case !r.Applied:
		m.upserts.WithLabelValues(account, "stale").Inc()
		return
	case r.Created:
		m.upserts.WithLabelValues(account, "created").Inc()
	case r.Changed:
		m.upserts.WithLabelValues(account, "changed").Inc()
	default:
		m.upserts.WithLabelValues(account, "unchanged").Inc()
	}
	if statusChanged(r) {
		m.statusChanges.WithLabelValues(account, string(r.Status)).Inc()
	}
}
