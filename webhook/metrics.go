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
	requests                           *prometheus.CounterVec
	signatureMissing, signatureInvalid prometheus.Counter
	publishDuration                    prometheus.Observer
	ignoredVec                         *prometheus.CounterVec
	ignoredBy                          map[ordersync.IgnoreReason]prometheus.Counter
	recordDropped                      prometheus.Counter
	bodyBytes                          prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ordersync_webhook_requests_total",
		Help: "Webhook requests by account and outcome.",
	}, []string{"account", "outcome"})
	sigFailures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ordersync_webhook_signature_failures_total",
		Help: "Webhooks refused for their signature, by reason (missing, invalid).",
	}, []string{"reason"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ordersync_webhook_publish_duration_seconds",
		Help:    "Time to make a webhook durable in the queue (publish until ack).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	ignored := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ordersync_webhook_ignored_total",
		Help: "Webhooks acknowledged and queued as ignored, by reason.",
	}, []string{"reason"})
	dropped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ordersync_webhook_rejected_log_dropped_total",
		Help: "Rejected webhooks not written to the event log or the rejection record (buffer full or write failed).",
	})
	bodyBytes := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ordersync_webhook_body_buffer_bytes",
		Help: "Bytes of buffer held by webhook bodies being read or handled.",
	})
	if reg != nil {
		var err error
		if bodyBytes, err = collect.Register(reg, bodyBytes); err != nil {
			return nil, err
		}
		if requests, err = collect.Register(reg, requests); err != nil {
			return nil, err
		}
		if sigFailures, err = collect.Register(reg, sigFailures); err != nil {
			return nil, err
		}
		if duration, err = collect.Register(reg, duration); err != nil {
			return nil, err
		}
		if ignored, err = collect.Register(reg, ignored); err != nil {
			return nil, err
		}
		if dropped, err = collect.Register(reg, dropped); err != nil {
			return nil, err
		}
	}
	m := &metrics{
		requests:         requests,
		signatureMissing: sigFailures.WithLabelValues("missing"),
		signatureInvalid: sigFailures.WithLabelValues("invalid"),
		publishDuration:  duration,
		ignoredVec:       ignored,
		ignoredBy:        map[ordersync.IgnoreReason]prometheus.Counter{},
		recordDropped:    dropped,
		bodyBytes:        bodyBytes,
	}
	for _, r := range ignoreReasons {
		m.ignoredBy[r] = ignored.WithLabelValues(string(r))
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
