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

// RelayConfig configures the outbox relay.
type RelayConfig struct {
	Outbox    ordersync.Outbox
	Publisher ordersync.MessagePublisher
	// Interval is how often the relay looks for unsent messages when nobody
	// calls Notify. Default 250ms.
	Interval time.Duration
	// BatchSize is how many messages one round reads. Default 200.
	BatchSize int
	// PublishTimeout bounds the wait for one round's acks; default 5s. A
	// queue whose store failed a write answers nothing: without a bound
	// the relay would wait for the publisher's own abandonment of the
	// ack, a minute, before trying again.
	PublishTimeout time.Duration
	Registerer     prometheus.Registerer
	Logger         *slog.Logger
}

func (c RelayConfig) withDefaults() RelayConfig {
	if c.Interval <= 0 {
		c.Interval = 250 * time.Millisecond
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 200
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 5 * time.Second
	}
	defaultDeps(&c.Registerer, &c.Logger, nil)
	return c
}

func (c RelayConfig) validate() error {
	switch {
	case c.Outbox == nil:
		return errors.New("worker: RelayConfig.Outbox is required")
	case c.Publisher == nil:
		return errors.New("worker: RelayConfig.Publisher is required")
	}
	return nil
}

// Relay publishes the outbox: order events the mirror committed together
// with the change that caused them. A message is marked sent only after
// JetStream acknowledged it; a crash in between re-publishes it with the same
// Nats-Msg-Id, which JetStream drops as a duplicate, so each PAID trigger
// reaches subscribers once.
type Relay struct {
	cfg     RelayConfig
	wake    chan struct{}
	metrics *relayMetrics
}

// NewRelay returns a relay; call Run.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newRelayMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new relay: register metrics: %w", err)
	}
	return &Relay{cfg: cfg, wake: make(chan struct{}, 1), metrics: m}, nil
}

// Notify wakes the relay now, as after a commit that queued messages.
func (r *Relay) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run publishes until ctx is cancelled, then makes one last bounded attempt
// so a clean shutdown leaves nothing it could have sent.
func (r *Relay) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	failing := false
	for {
		_, err := r.Flush(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			r.cfg.Logger.Error("outbox relay: publish failed; retrying", "err", err)
			failing = true
		case err == nil && failing:
			r.cfg.Logger.Info("outbox relay: publishing again")
			failing = false
		}
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_, _ = r.Flush(final)
			cancel()
			return nil
		case <-r.wake:
		case <-t.C:
		}
	}
}

// Flush publishes every pending message and returns how many it sent.
func (r *Relay) Flush(ctx context.Context) (int, error) {
	sent := 0
	for {
		msgs, err := r.cfg.Outbox.PendingOutbox(ctx, r.cfg.BatchSize)
		if err != nil {
			return sent, err
		}
		if len(msgs) == 0 {
			return sent, nil
		}
		// Only the messages acknowledged in a row from the first are marked
		// sent, so a failure leaves it and everything after it pending, to
		// be published again in order.
		pubCtx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
		dups, pubErr := r.cfg.Publisher.PublishMessages(pubCtx, msgs)
		cancel()
		if pubErr != nil {
			r.metrics.failures.Inc()
		}
		ids := make([]int64, len(dups))
		for i, dup := range dups {
			r.metrics.published.WithLabelValues(subjectKind(msgs[i].Subject), boolLabel(dup)).Inc()
			ids[i] = msgs[i].ID
		}
		if len(ids) > 0 {
			if err := r.cfg.Outbox.MarkOutboxSent(ctx, ids, time.Now()); err != nil {
				return sent, err
			}
			sent += len(ids)
		}
		if pubErr != nil {
			return sent, pubErr
		}
		if len(msgs) < r.cfg.BatchSize {
			return sent, nil
		}
	}
}

func subjectKind(subject string) string {
	if subject == ordersync.SubjectPaid {
		return "paid"
	}
	return "status"
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
