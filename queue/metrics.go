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
	published       *prometheus.CounterVec
	publishDuration *prometheus.HistogramVec
	delivered       prometheus.Counter
	fetchErrors     prometheus.Counter
	settlements     *prometheus.CounterVec
	pullRequests    *prometheus.CounterVec
	// lost counts deliveries of order events the server sent and no
	// reader received.
	lost prometheus.Counter

	// Resolved once from the vectors above, so that each publish and
	// settlement only counts.
	events, orders *streamMetrics
	settled        struct{ ack, retry, term prometheus.Counter }
	// pulls count the pull requests sent to the events' and the order
	// events' consumers: what an idle process spends its wake-ups on.
	pulls struct{ events, orders prometheus.Counter }
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_queue_published_total",
			Help: "Messages published to JetStream, by stream (events, orders) and result (stored, duplicate, error).",
		}, []string{"stream", "result"}),
		publishDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ordersync_queue_publish_duration_seconds",
			Help:    "Time from publish to JetStream acknowledgement, by stream; for a batch of order messages, from the start of the batch.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
		}, []string{"stream"}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_queue_deliveries_total",
			Help: "Events handed to workers, redeliveries included.",
		}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_queue_fetch_errors_total",
			Help: "Fetch requests that failed.",
		}),
		pullRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_queue_pull_requests_total",
			Help: "Pull requests sent to JetStream consumers, by stream (events, orders); an idle consumer sends one per long-poll wait.",
		}, []string{"stream"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_queue_order_deliveries_lost_total",
			Help: "Deliveries of order events the server sent to an endpoint's reader that it never received (a pull given up as the server answered it); they come back after the ack wait, and the events after them wait for them.",
		}),
		settlements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_queue_settlements_total",
			Help: "Deliveries settled by workers, by action (ack, retry, term).",
		}, []string{"action"}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.published), collect.Of(&m.publishDuration), collect.Of(&m.delivered),
		collect.Of(&m.fetchErrors), collect.Of(&m.pullRequests), collect.Of(&m.lost), collect.Of(&m.settlements)); err != nil {
		return nil, err
	}
	stream := func(name string) *streamMetrics {
		return &streamMetrics{
			stored:    m.published.WithLabelValues(name, "stored"),
			duplicate: m.published.WithLabelValues(name, "duplicate"),
			failed:    m.published.WithLabelValues(name, "error"),
			duration:  m.publishDuration.WithLabelValues(name),
		}
	}
	m.events, m.orders = stream("events"), stream("orders")
	m.settled.ack = m.settlements.WithLabelValues("ack")
	m.settled.retry = m.settlements.WithLabelValues("retry")
	m.settled.term = m.settlements.WithLabelValues("term")
	m.pulls.events = m.pullRequests.WithLabelValues("events")
	m.pulls.orders = m.pullRequests.WithLabelValues("orders")
	return m, nil
}
