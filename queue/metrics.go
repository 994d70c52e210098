package queue

import (
	"time"

	collect "github.com/ordersync/ordersync/metrics"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

type streamMetrics struct {
	stored, duplicate, failed prometheus.Counter
	duration                  prometheus.Observer
}

// record counts one publish begun at start: failed with err, or stored or
// found a duplicate by ack.
func (m *streamMetrics) record(start time.Time, ack *jetstream.PubAck, err error) {
	m.duration.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		m.failed.Inc()
	case ack.Duplicate:
		m.duplicate.Inc()
	default:
		m.stored.Inc()
	}
}

type metrics struct {
	events, orders *streamMetrics
	// pulls count the pull requests sent to the events' and the order
	// events' consumers: what an idle process spends its wake-ups on.
	pulls       struct{ events, orders prometheus.Counter }
	delivered   prometheus.Counter
	fetchErrors prometheus.Counter
	settled     struct{ ack, retry, term prometheus.Counter }
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	published := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ordersync_queue_published_total",
		Help: "Messages published to JetStream, by stream (events, orders) and result (stored, duplicate, error).",
	}, []string{"stream", "result"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ordersync_queue_publish_duration_seconds",
		Help:    "Time from publish to JetStream acknowledgement, by stream; for a batch of order messages, from the start of the batch.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	}, []string{"stream"})
	delivered := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ordersync_queue_deliveries_total",
		Help: "Events handed to workers, redeliveries included.",
	})
	pulls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ordersync_queue_pull_requests_total",
		Help: "Pull requests sent to JetStream consumers, by stream (events, orders); an idle consumer sends one per long-poll wait.",
	}, []string{"stream"})
	fetchErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ordersync_queue_fetch_errors_total",
		Help: "Fetch requests that failed.",
	})
	settled := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ordersync_queue_settlements_total",
		Help: "Deliveries settled by workers, by action (ack, retry, term).",
	}, []string{"action"})
	if reg != nil {
		var err error
		if published, err = collect.Register(reg, published); err != nil {
			return nil, err
		}
		if duration, err = collect.Register(reg, duration); err != nil {
			return nil, err
		}
		if pulls, err = collect.Register(reg, pulls); err != nil {
			return nil, err
		}
		if delivered, err = collect.Register(reg, delivered); err != nil {
			return nil, err
		}
		if fetchErrors, err = collect.Register(reg, fetchErrors); err != nil {
			return nil, err
		}
		if settled, err = collect.Register(reg, settled); err != nil {
			return nil, err
		}
	}
	stream := func(name string) *streamMetrics {
		return &streamMetrics{
			stored:    published.WithLabelValues(name, "stored"),
			duplicate: published.WithLabelValues(name, "duplicate"),
			failed:    published.WithLabelValues(name, "error"),
			duration:  duration.WithLabelValues(name),
		}
	}
	m := &metrics{events: stream("events"), orders: stream("orders"), delivered: delivered, fetchErrors: fetchErrors}
	m.pulls.events = pulls.WithLabelValues("events")
	m.pulls.orders = pulls.WithLabelValues("orders")
	m.settled.ack = settled.WithLabelValues("ack")
	m.settled.retry = settled.WithLabelValues("retry")
	m.settled.term = settled.WithLabelValues("term")
	return m, nil
}
