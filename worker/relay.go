package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/tracing"
)

// RelayConfig configures the outbox relay.
type RelayConfig struct {
	Outbox    ordersync.Outbox
	Publisher ordersync.MessagePublisher
	// Interval is how often the relay looks for unsent messages when nobody
	// calls Notify, and the longest it publishes offered messages without
	// reading the table too. Default 250ms.
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
	// Tracer traces each traced message's publish; nil: off.
	Tracer *tracing.Tracer
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
	// flushing makes rounds one at a time: Run's and a caller's Flush.
	flushing sync.Mutex
	mu       sync.Mutex
	// held is what Offer handed over and no round published yet.
	held []ordersync.OutboxMessage
	// last is the id of the last message published; 0 until a round read
	// the table, and again after a failure.
	last int64
	// readAt is when a round last read the table; rounds are one at a
	// time, so only they touch it.
	readAt time.Time
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

// Offer hands the relay messages just committed (ApplyResult.Messages)
// and wakes it: messages that continue the last one published are
// published from here, not read back; the others are read back, and what
// the table does not keep (the headers' facts) comes from here. What it
// holds is bounded by BatchSize; past that it forgets them, for the table
// to give them again.
//
// The outbox hands out ids in commit order: SQLite has one writer, and
// PostgreSQL's writers lock the outbox around their inserts. A message
// that continues the last one published therefore has nothing unpublished
// before it. Ids may have holes (a rolled-back insert, another process's
// message), which send the relay to the table.
func (r *Relay) Offer(msgs []ordersync.OutboxMessage) {
	if len(msgs) == 0 {
		return
	}
	r.mu.Lock()
	if len(r.held)+len(msgs) > r.cfg.BatchSize {
		r.held = nil
	} else {
		r.held = append(r.held, msgs...)
	}
	r.mu.Unlock()
	r.Notify()
}

// take returns the held messages that continue the last one published, in
// order, at most BatchSize; none when a message is missing between them
// (another process's, or one not yet offered), which a read of the table
// then gives.
func (r *Relay) take() []ordersync.OutboxMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.SortFunc(r.held, func(a, b ordersync.OutboxMessage) int { return cmp.Compare(a.ID, b.ID) })
	// With ids in commit order, every id up to the last published was
	// published (a table read gives the oldest first): what is held of
	// them came from a commit another relay, or a read, published.
	if r.last > 0 {
		r.held = slices.DeleteFunc(r.held, func(m ordersync.OutboxMessage) bool { return m.ID <= r.last })
	}
	n := 0
	for n < len(r.held) && n < r.cfg.BatchSize && r.last > 0 && r.held[n].ID == r.last+int64(n)+1 {
		n++
	}
	out := slices.Clone(r.held[:n])
	r.held = slices.Delete(r.held, 0, n)
	return out
}

// published records the messages a round published: they are no longer
// held, and the last of them is the one the next held must continue.
func (r *Relay) published(msgs []ordersync.OutboxMessage) {
	if len(msgs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sent := make(map[int64]bool, len(msgs))
	for _, m := range msgs {
		sent[m.ID] = true
	}
	r.held = slices.DeleteFunc(r.held, func(m ordersync.OutboxMessage) bool { return sent[m.ID] })
	r.last = max(r.last, msgs[len(msgs)-1].ID)
}

// withHeld gives messages read from the table what the table does not
// keep and their offered copies have: the status reached and where a
// delivery's body puts the status change, which the relay publishes as
// headers.
func (r *Relay) withHeld(msgs []ordersync.OutboxMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) == 0 {
		return
	}
	held := make(map[int64]*ordersync.OutboxMessage, len(r.held))
	for i := range r.held {
		held[r.held[i].ID] = &r.held[i]
	}
	for i := range msgs {
		if h := held[msgs[i].ID]; h != nil && h.MsgID == msgs[i].MsgID {
			msgs[i].To, msgs[i].StatusChangeAt = h.To, h.StatusChangeAt
		}
	}
}

// forget makes the next round read the table: after a failure, what was
// taken from held may be unpublished.
func (r *Relay) forget() {
	r.mu.Lock()
	r.last = 0
	r.mu.Unlock()
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

// Flush publishes the pending messages and returns how many it sent:
// those offered that continue the last one published, from memory; when
// there were none (or some were missing between them), or the table was
// last read an Interval ago, every pending message of the table. The
// timed read finds a message committed below the last one published,
// which only a writer of a release without the outbox lock makes (a
// rolling upgrade on PostgreSQL), within an Interval while offers keep
// coming.
func (r *Relay) Flush(ctx context.Context) (int, error) {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	sent, err := r.flush(ctx)
	if err != nil {
		r.forget()
	}
	return sent, err
}

func (r *Relay) flush(ctx context.Context) (int, error) {
	sent, fromMemory := 0, false
	for {
		msgs := r.take()
		read := len(msgs) == 0
		if read {
			r.mu.Lock()
			gap := len(r.held) > 0
			r.mu.Unlock()
			if fromMemory && !gap && time.Since(r.readAt) < r.cfg.Interval {
				return sent, nil
			}
			r.readAt = time.Now()
			var err error
			if msgs, err = r.cfg.Outbox.PendingOutbox(ctx, r.cfg.BatchSize); err != nil {
				return sent, err
			}
			r.metrics.reads.Inc()
			if len(msgs) == 0 {
				return sent, nil
			}
			r.withHeld(msgs)
		}
		fromMemory = !read
		// Only the messages acknowledged in a row from the first are marked
		// sent, so a failure leaves it and everything after it pending, to
		// be published again in order.
		pubCtx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
		traced, spans := startRelays(pubCtx, r.cfg.Tracer, msgs)
		dups, pubErr := r.cfg.Publisher.PublishMessages(pubCtx, traced)
		endSpans(spans, len(dups), pubErr)
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
			r.published(msgs[:len(ids)])
		}
		if pubErr != nil {
			return sent, pubErr
		}
		if read && len(msgs) < r.cfg.BatchSize {
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
