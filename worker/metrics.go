package worker

import (
	collect "github.com/ordersync/ordersync/metrics"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// Fetch outcomes, the label values of ordersync_fetch_requests_total.
const (
	outcomeOK          = "ok"
	outcomeBreakerOpen = "breaker_open"
)

// Drift kinds, the label values of ordersync_drift_total.
const (
	driftStatusMismatch = "status_mismatch"
	driftMissedWebhook  = "missed_webhook"
)

// syncerMetrics are the collectors of fetching, owned by an account's
// Syncer; the mirror's are the MirrorWriter's.
type syncerMetrics struct {
	fetchRequests       *prometheus.CounterVec
	fetchDuration       prometheus.Histogram
	fetchRetries        prometheus.Counter
	breakerOpen         prometheus.Gauge
	breakerOpens        prometheus.Counter
	credentialsRejected prometheus.Gauge
	rateLimit           prometheus.Gauge
	drift               *prometheus.CounterVec
}

func newSyncerMetrics(reg prometheus.Registerer) (*syncerMetrics, error) {
	m := &syncerMetrics{
		fetchRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_fetch_requests_total",
			Help: "Order detail requests to the payment link service, by outcome.",
		}, []string{"outcome"}),
		fetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ordersync_fetch_duration_seconds",
			Help:    "Duration of one order detail request to the payment link service.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		fetchRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_fetch_retries_total",
			Help: "Order detail requests retried after a transient failure.",
		}),
		breakerOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_upstream_breaker_open",
			Help: "1 while the circuit breaker in front of the payment link service is open or half-open.",
		}),
		breakerOpens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_upstream_breaker_opens_total",
			Help: "Times the circuit breaker opened after fetches had been flowing (closed to open): a flapping upstream opens it again and again.",
		}),
		credentialsRejected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_upstream_credentials_rejected",
			Help: "1 while the payment link service rejects the secret key and fetching is paused.",
		}),
		rateLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_upstream_rate_limit_rps",
			Help: "The rate requests to the payment link service may leave at: upstream_rps, or lower while its 429s say so; 0 for no limit.",
		}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_drift_total",
			Help: "Disagreements between what events said and what the service answered, by kind.",
		}, []string{"kind"}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.fetchRequests), collect.Of(&m.fetchDuration), collect.Of(&m.fetchRetries),
		collect.Of(&m.breakerOpen), collect.Of(&m.breakerOpens), collect.Of(&m.credentialsRejected), collect.Of(&m.rateLimit),
		collect.Of(&m.drift)); err != nil {
		return nil, err
	}
	// Every kind exists from the start, so alerts on increase() see the
	// first drift and dashboards show zero rather than nothing.
	for _, kind := range []string{driftStatusMismatch, driftMissedWebhook} {
		m.drift.WithLabelValues(kind)
	}
	return m, nil
}

// statusChanged reports whether an apply moved the order into a new status,
// counting a newly mirrored order as entering its first status.
func statusChanged(r ordersync.ApplyResult) bool {
	return r.Applied && (r.Created || r.From != r.Status)
}

// poolMetrics are the collectors only a Pool has.
type poolMetrics struct {
	deadLetters     *prometheus.CounterVec
	syncLag         prometheus.Histogram
	pendingMessages prometheus.Gauge
	coalesced       prometheus.Counter
	answered        prometheus.Counter
	fetchLimit      prometheus.Gauge
}

func newPoolMetrics(reg prometheus.Registerer) (*poolMetrics, error) {
	m := &poolMetrics{
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_deadletters_total",
			Help: "Events that ended in a dead letter, by reason.",
		}, []string{"reason"}),
		// Doubling from 1 ms to past an hour (4194 s): an outage's lag is
		// minutes, and a top bucket below it would cap every quantile there.
		syncLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ordersync_sync_lag_seconds",
			Help:    "Time from a webhook's receipt to the commit of the order it announced.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 23),
		}),
		pendingMessages: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_consumer_pending_messages",
			Help: "Queued events not yet delivered to any worker.",
		}),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_worker_events_coalesced_total",
			Help: "Events that joined a fetch already planned or running for their order instead of causing one.",
		}),
		answered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_worker_events_already_fetched_total",
			Help: "Webhook events acknowledged without a fetch: the mirror already held a fetch of their order sent after their receipt.",
		}),
		fetchLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersync_worker_fetch_limit",
			Help: "Fetches the worker pool may run at once: its concurrency, less while it yields the CPU to the webhook receiver.",
		}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.deadLetters), collect.Of(&m.syncLag), collect.Of(&m.pendingMessages),
		collect.Of(&m.coalesced), collect.Of(&m.answered), collect.Of(&m.fetchLimit)); err != nil {
		return nil, err
	}
	for _, reason := range []ordersync.DeadLetterReason{ordersync.ReasonUnknownOrder, ordersync.ReasonUnresolved,
		ordersync.ReasonMalformed, ordersync.ReasonRetriesExhausted, ordersync.ReasonRejected} {
		m.deadLetters.WithLabelValues(string(reason))
	}
	return m, nil
}

// relayMetrics are the outbox relay's collectors.
type relayMetrics struct {
	published *prometheus.CounterVec
	failures  prometheus.Counter
	reads     prometheus.Counter
}

func newRelayMetrics(reg prometheus.Registerer) (*relayMetrics, error) {
	m := &relayMetrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_outbox_published_total",
			Help: "Outbox messages published to NATS, by kind (paid, status) and whether JetStream had it already.",
		}, []string{"kind", "duplicate"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_outbox_publish_failures_total",
			Help: "Outbox publish attempts that failed and will be retried.",
		}),
		reads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_outbox_reads_total",
			Help: "Reads of the outbox table by the relay: each interval, after a failure, and when the messages handed to it after a commit miss one.",
		}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.published), collect.Of(&m.failures), collect.Of(&m.reads)); err != nil {
		return nil, err
	}
	return m, nil
}

// prunedTables are the label values of ordersync_pruned_rows_total.
var prunedTables = []string{"outbox", "event_log", "delivery_log", "document_changes", "audit_log", "console_sessions", "replay_jobs"}

// prunerMetrics are the pruner's collectors.
type prunerMetrics struct {
	pruned *prometheus.CounterVec
}

func newPrunerMetrics(reg prometheus.Registerer) (*prunerMetrics, error) {
	m := &prunerMetrics{
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_pruned_rows_total",
			Help: "Rows the pruner deleted past their retention, by table (outbox, event_log, delivery_log, document_changes, audit_log, console_sessions, replay_jobs).",
		}, []string{"table"}),
	}
	if err := collect.RegisterAll(reg, collect.Of(&m.pruned)); err != nil {
		return nil, err
	}
	for _, table := range prunedTables {
		m.pruned.WithLabelValues(table) // exported at 0 from the start
	}
	return m, nil
}
