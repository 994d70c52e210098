package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// PendingOutboxReader is the part of the mirror the outbox age collector
// reads.
type PendingOutboxReader interface {
	PendingOutbox(ctx context.Context, limit int) ([]ordersync.OutboxMessage, error)
}

// OutboxAgeCollector exports ordersync_outbox_oldest_unsent_age_seconds:
// how long the oldest message not yet published from the outbox (a PAID
// trigger, a status change) has waited, 0 when none waits. It reads the
// mirror, not the relay, so it also rises when no relay runs at all. It
// queries at scrape time, at most once per MaxAge; the age itself is
// computed at every scrape.
type OutboxAgeCollector struct {
	outbox PendingOutboxReader
	maxAge time.Duration
	logger *slog.Logger
	desc   *prometheus.Desc

	mu      sync.Mutex
	at      time.Time
	read    bool
	oldest  time.Time // zero: nothing unsent
	lastErr error
}

// NewOutboxAgeCollector returns a collector over outbox; register it
// yourself.
func NewOutboxAgeCollector(outbox PendingOutboxReader, maxAge time.Duration, logger *slog.Logger) *OutboxAgeCollector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &OutboxAgeCollector{
		outbox: outbox, maxAge: maxAge, logger: logger,
		desc: prometheus.NewDesc("ordersync_outbox_oldest_unsent_age_seconds",
			"Age of the oldest outbox message (PAID trigger, status change) not yet published; 0 when none waits.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *OutboxAgeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *OutboxAgeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read || time.Since(c.at) >= c.maxAge {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		msgs, err := c.outbox.PendingOutbox(ctx, 1)
		cancel()
		if err != nil {
			if c.lastErr == nil {
				c.logger.Error("read the oldest unsent outbox message for metrics", "err", err)
			}
			c.lastErr = err
		} else {
			c.oldest, c.at, c.read, c.lastErr = time.Time{}, time.Now(), true, nil
			if len(msgs) > 0 {
				c.oldest = msgs[0].CreatedAt
			}
		}
	}
	age := 0.0
	if !c.oldest.IsZero() {
		age = max(0, time.Since(c.oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, age)
}
