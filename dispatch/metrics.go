package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"

	collect "github.com/ordersync/ordersync/metrics"
)

// dispatchMetrics are the dispatcher's series, each per endpoint.
type dispatchMetrics struct {
	events   *prometheus.CounterVec
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	lag      *prometheus.HistogramVec
	oldest   *prometheus.GaugeVec
	disabled *prometheus.GaugeVec
}

func newDispatchMetrics(reg prometheus.Registerer) (dispatchMetrics, error) {
	m := dispatchMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_delivery_events_total",
			Help: "Order events settled per endpoint, by outcome (delivered, dead_lettered).",
		}, []string{"endpoint", "outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_delivery_attempts_total",
			Help: "HTTP delivery attempts per endpoint, by result (2xx, 3xx, 4xx, 410, 429, 5xx, timeout, network).",
		}, []string{"endpoint", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ordersync_delivery_attempt_duration_seconds",
			Help:    "Time from sending a delivery to its answer, per endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"endpoint"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ordersync_delivery_lag_seconds",
			Help:    "Time from an order event's publication to the endpoint's 2xx, per endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 12),
		}, []string{"endpoint"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_delivery_oldest_undelivered_age_seconds",
			Help: "Age of the oldest order event this process holds undelivered for an endpoint (0: none).",
		}, []string{"endpoint"}),
		disabled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_delivery_endpoint_disabled",
			Help: "1 when an endpoint is disabled (by hand, or by a 410 Gone), else 0.",
		}, []string{"endpoint"}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.events), collect.Of(&m.attempts), collect.Of(&m.duration),
		collect.Of(&m.lag), collect.Of(&m.oldest), collect.Of(&m.disabled)); err != nil {
		return dispatchMetrics{}, err
	}
	return m, nil
}

// all is every series, each with the label "endpoint".
func (m dispatchMetrics) all() []interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
} {
	return []interface {
		prometheus.Collector
		DeletePartialMatch(prometheus.Labels) int
	}{m.events, m.attempts, m.duration, m.lag, m.oldest, m.disabled}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
