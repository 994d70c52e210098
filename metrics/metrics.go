// Package metrics builds the Prometheus registry ordersync exports and the
// collectors that belong to no single pipeline stage: the mirror's orders by
// status and the outbox's oldest unsent message. Each stage (webhook, queue,
// dispatch, and in worker the pool, syncer, writer, relay, pruner,
// reconciler) builds its own collectors in one shape: a struct of them made
// by newXMetrics(reg), which registers them all with RegisterAll; nothing
// here is global.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ordersync/ordersync"
)

// NewRegistry returns a registry with the Go runtime and process collectors
// and ordersync_build_info: the registry of every process, whatever its roles.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newBuildInfo())
	return reg
}

// Handler serves the registry in the Prometheus exposition format.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// OrderCounter is the part of the mirror the orders collector reads.
type OrderCounter interface {
	CountOrdersByStatus(ctx context.Context) (map[ordersync.Status]int, error)
}

// OrdersCollector exports ordersync_mirror_orders{status}: how many orders
// the mirror holds in each status. It queries the mirror at scrape time, at
// most once per MaxAge, so frequent scrapes cost one query.
type OrdersCollector struct {
	counter OrderCounter
	maxAge  time.Duration
	logger  *slog.Logger
	desc    *prometheus.Desc

	mu      sync.Mutex
	at      time.Time
	counts  map[ordersync.Status]int
	lastErr error
}

// NewOrdersCollector returns a collector over counter; register it yourself.
func NewOrdersCollector(counter OrderCounter, maxAge time.Duration, logger *slog.Logger) *OrdersCollector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &OrdersCollector{
		counter: counter,
		maxAge:  maxAge,
		logger:  logger,
		desc: prometheus.NewDesc("ordersync_mirror_orders",
			"Orders in the mirror by status (UNKNOWN: recorded but not fetched yet).", []string{"status"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *OrdersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *OrdersCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil || time.Since(c.at) >= c.maxAge {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		counts, err := c.counter.CountOrdersByStatus(ctx)
		cancel()
		if err != nil {
			if c.lastErr == nil {
				c.logger.Error("count orders for metrics", "err", err)
			}
			c.lastErr = err
		} else {
			c.counts, c.at, c.lastErr = counts, time.Now(), nil
		}
	}
	// Label values come from a fixed set: the known statuses, UNKNOWN for
	// orders recorded but never fetched, OTHER for anything upstream invents.
	values := map[string]int{"UNKNOWN": 0, "OTHER": 0}
	for _, st := range ordersync.Statuses {
		values[string(st)] = 0
	}
	for st, n := range c.counts {
		switch {
		case st == "":
			values["UNKNOWN"] += n
		case st.Valid():
			values[string(st)] += n
		default:
			values["OTHER"] += n
		}
	}
	for label, n := range values {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), label)
	}
}

// registerCollector registers c with reg, or returns the collector already
// registered under the same description, so that stages sharing one
// registry (several syncers, queues or receivers in one process) share
// their collectors instead of failing.
func registerCollector[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// A Field is a stage's struct field that holds one of its collectors; Of
// makes one.
type Field interface {
	register(reg prometheus.Registerer) error
}

type field[C prometheus.Collector] struct{ c *C }

func (f field[C]) register(reg prometheus.Registerer) (err error) {
	*f.c, err = registerCollector(reg, *f.c)
	return err
}

// Of is the field at c, for RegisterAll.
func Of[C prometheus.Collector](c *C) Field { return field[C]{c} }

// RegisterAll is the one way a stage registers its collectors, the last
// step of its newMetrics(reg) (alertmanager's notify.NewMetrics is the
// model): each field, given by its address, is registered with reg by
// registerCollector, and holds the collector already registered under its
// description when there is one. A nil reg registers nothing: the
// collectors count, and nobody reads them.
func RegisterAll(reg prometheus.Registerer, fields ...Field) error {
	if reg == nil {
		return nil
	}
	for _, f := range fields {
		if err := f.register(reg); err != nil {
			return err
		}
	}
	return nil
}
