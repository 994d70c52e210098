package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// PrunerConfig configures a Pruner.
type PrunerConfig struct {
	Store ordersync.Retention
	// OutboxRetention keeps published outbox messages this long after they
	// were sent; 0 keeps them forever. Unpublished messages are never
	// pruned.
	OutboxRetention time.Duration
	// EventLogRetention keeps event log rows this long after they were
	// received, delivery log rows this long after their delivery ended,
	// and document change rows this long after their fetch: together they
	// make an order's timeline. 0 keeps them forever.
	EventLogRetention time.Duration
	// AuditRetention keeps audit records this long; 0 keeps them forever.
	AuditRetention time.Duration
	// ReplayJobRetention keeps the console's replay jobs this long after
	// they ended; 0 keeps them forever. A running job is never pruned.
	ReplayJobRetention time.Duration
	// Interval between passes. Default 10m.
	Interval time.Duration
	// Chunk is the most rows one delete removes: each is a short write
	// transaction of its own, so webhooks and workers are not held up
	// behind one long one. Default 1000.
	Chunk      int
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Clock      func() time.Time
}

func (c PrunerConfig) withDefaults() PrunerConfig {
	if c.Interval <= 0 {
		c.Interval = 10 * time.Minute
	}
	if c.Chunk <= 0 {
		c.Chunk = 1000
	}
	defaultDeps(&c.Registerer, &c.Logger, &c.Clock)
	return c
}

func (c PrunerConfig) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("worker: PrunerConfig.Store is required")
	case c.OutboxRetention < 0:
		return fmt.Errorf("worker: PrunerConfig.OutboxRetention must be ≥ 0, got %v", c.OutboxRetention)
	case c.EventLogRetention < 0:
		return fmt.Errorf("worker: PrunerConfig.EventLogRetention must be ≥ 0, got %v", c.EventLogRetention)
	case c.AuditRetention < 0:
		return fmt.Errorf("worker: PrunerConfig.AuditRetention must be ≥ 0, got %v", c.AuditRetention)
	case c.ReplayJobRetention < 0:
		return fmt.Errorf("worker: PrunerConfig.ReplayJobRetention must be ≥ 0, got %v", c.ReplayJobRetention)
	}
	return nil
}

// Pruner deletes, pass after pass, what the mirror keeps past its
// retention, so that it does not grow without end: every webhook adds an
// event log row, every status change an outbox message with the whole
// order, every order event a delivery log row per endpoint, every fetch
// that changes a document a document change row, every action an audit
// record, every sign-in a console session, every bulk replay a replay job.
type Pruner struct {
	cfg     PrunerConfig
	metrics *prunerMetrics
}

// NewPruner returns a pruner.
func NewPruner(cfg PrunerConfig) (*Pruner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newPrunerMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new pruner: register metrics: %w", err)
	}
	return &Pruner{cfg: cfg, metrics: m}, nil
}

// PruneReport is what one pass deleted.
type PruneReport struct {
	Outbox, EventLog, DeliveryLog, DocumentChanges, AuditLog, ConsoleSessions, ReplayJobs int
}

// Prune runs one pass: for each table with a retention, deletes chunk
// after chunk until no row past it is left.
func (p *Pruner) Prune(ctx context.Context) (PruneReport, error) {
	var rep PruneReport
	now := p.cfg.Clock()
	tables := []struct {
		name      string
		retention time.Duration
		prune     func(context.Context, time.Time, int) (int, error)
		count     *int
	}{
		{"outbox", p.cfg.OutboxRetention, p.cfg.Store.PruneSentOutbox, &rep.Outbox},
		{"event_log", p.cfg.EventLogRetention, p.cfg.Store.PruneEventLog, &rep.EventLog},
		{"delivery_log", p.cfg.EventLogRetention, p.cfg.Store.PruneDeliveryLog, &rep.DeliveryLog},
		{"document_changes", p.cfg.EventLogRetention, p.cfg.Store.PruneDocumentChanges, &rep.DocumentChanges},
		{"audit_log", p.cfg.AuditRetention, p.cfg.Store.PruneAuditLog, &rep.AuditLog},
		{"replay_jobs", p.cfg.ReplayJobRetention, p.cfg.Store.PruneReplayJobs, &rep.ReplayJobs},
		// A session is done with the moment it expires: no retention.
		{"console_sessions", sessionsExpired, p.cfg.Store.PruneConsoleSessions, &rep.ConsoleSessions},
	}
	for _, t := range tables {
		if t.retention == 0 {
			continue
		}
		if t.retention == sessionsExpired {
			t.retention = 0
		}
		for {
			n, err := t.prune(ctx, now.Add(-t.retention), p.cfg.Chunk)
			*t.count += n
			p.metrics.pruned.WithLabelValues(t.name).Add(float64(n))
			if err != nil {
				return rep, err
			}
			if n < p.cfg.Chunk {
				break
			}
		}
	}
	return rep, nil
}

// sessionsExpired marks the console sessions' row of a pass: pruned once
// expired, whatever the retentions.
const sessionsExpired time.Duration = -1

// Enabled reports whether there is anything to prune: a retention set.
// Expired console sessions are pruned in every pass that runs; a lookup
// refuses them anyway, so without passes they only take room.
func (p *Pruner) Enabled() bool {
	return p.cfg.OutboxRetention > 0 || p.cfg.EventLogRetention > 0 || p.cfg.AuditRetention > 0 || p.cfg.ReplayJobRetention > 0
}

// Run prunes at once and then every Interval until ctx ends. It does
// nothing unless Enabled.
func (p *Pruner) Run(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		rep, err := p.Prune(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.cfg.Logger.Error("prune pass", "err", err, "outbox", rep.Outbox, "event_log", rep.EventLog, "delivery_log", rep.DeliveryLog,
				"document_changes", rep.DocumentChanges, "audit_log", rep.AuditLog, "console_sessions", rep.ConsoleSessions, "replay_jobs", rep.ReplayJobs)
		case rep != PruneReport{}:
			p.cfg.Logger.Info("pruned past retention", "outbox", rep.Outbox, "event_log", rep.EventLog, "delivery_log", rep.DeliveryLog,
				"document_changes", rep.DocumentChanges, "audit_log", rep.AuditLog, "console_sessions", rep.ConsoleSessions, "replay_jobs", rep.ReplayJobs)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
