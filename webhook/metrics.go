package webhook

import (
	collect "github.com/ordersync/ordersync/metrics"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// outcome is the label of ordersync_webhook_requests_total.
type outcome int

const (
	outcomeAccepted outcome = iota
	outcomeDuplicate
	outcomeIgnored
	outcomeUnauthorized
	outcomeBadRequest
	outcomeTooLarge
	outcomeMethodNotAllowed
	outcomeUnknownAccount
	outcomeUnavailable
	outcomeBusy
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	"accepted", "duplicate", "ignored", "unauthorized", "bad_request",
	"too_large", "method_not_allowed", "unknown_account", "unavailable", "busy",
}

var ignoreReasons = []ordersync.IgnoreReason{ordersync.IgnoreOtherProduct, ordersync.IgnoreSubscription, ordersync.IgnoreNoIdentity}

type metrics struct {
	requests          *prometheus.CounterVec
	signatureFailures *prometheus.CounterVec
	publishDuration   prometheus.Histogram
	ignoredVec        *prometheus.CounterVec
	recordDropped     prometheus.Counter
	bodyBytes         prometheus.Gauge

	// Resolved once from the vectors above, so that the hot path only
	// increments.
	signatureMissing, signatureInvalid prometheus.Counter
	ignoredBy                          map[ordersync.IgnoreReason]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_webhook_requests_total",
			Help: "Webhook requests by account and outcome.",
		}, []string{"account", "outcome"}),
		signatureFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_webhook_signature_failures_total",
			Help: "Webhooks refused for their signature, by reason (missing, invalid).",
		}, []string{"reason"}),
		publishDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ordersync_webhook_publish_duration_seconds",
			Help:    "Time to make a webhook durable in the queue (publish until ack).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		ignoredVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_webhook_ignored_total",
			Help: "Webhooks acknowledged and queued as ignored, by reason.",
		}, []string{"reason"}),
		recordDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_webhook_rejected_log_dropped_total",
			Help: "Rejected webhooks not written to the event log or the rejection record (buffer full or write failed).",
		}),
		bodyBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_webhook_body_buffer_bytes",
			Help: "Bytes of buffer held by webhook bodies being read or handled.",
		}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.bodyBytes), collect.Of(&m.requests), collect.Of(&m.signatureFailures),
		collect.Of(&m.publishDuration), collect.Of(&m.ignoredVec), collect.Of(&m.recordDropped)); err != nil {
		return nil, err
	}
	m.signatureMissing = m.signatureFailures.WithLabelValues("missing")
	m.signatureInvalid = m.signatureFailures.WithLabelValues("invalid")
	m.ignoredBy = map[ordersync.IgnoreReason]prometheus.Counter{}
	for _, r := range ignoreReasons {
		m.ignoredBy[r] = m.ignoredVec.WithLabelValues(string(r))
	}
	return m, nil
}

// requestsOf resolves an account's request counters once, so the hot path
// only increments.
func (m *metrics) requestsOf(account string) [numOutcomes]prometheus.Counter {
	var cs [numOutcomes]prometheus.Counter
	for o, name := range outcomeNames {
		cs[o] = m.requests.WithLabelValues(account, name)
	}
	return cs
}

// ignored returns the counter of reason; a reason the domain adds later
// gets its own label value.
func (m *metrics) ignored(reason ordersync.IgnoreReason) prometheus.Counter {
	if c, ok := m.ignoredBy[reason]; ok {
		return c
	}
	return m.ignoredVec.WithLabelValues(string(reason))
}
