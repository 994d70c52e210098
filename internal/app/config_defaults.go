package app

import (
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/webhook"
	"github.com/ordersync/ordersync/worker"
)

// DefaultConfig holds every default, in one place.
func DefaultConfig() Config {
	return Config{
		Role:            "all",
		DataDir:         "data",
		MigrateOnStart:  true,
		DBMaxOpenConns:  16,
		DBMaxIdleConns:  0,
		JetStreamSync:   "default",
		NATSReplicas:    1,
		NATSNamespace:   "ordersync",
		LeaderTTL:       10 * time.Second,
		AckWait:         queue.DefaultAckWait,
		Listen:          ":8080",
		AdminListen:     "127.0.0.1:9090",
		Workers:         64,
		UpstreamTimeout: 10 * time.Second,
		UpstreamRPS:     worker.DefaultUpstreamRPS,
		ReconcileRPS:    worker.DefaultReconcileBudget,
		// Why these defaults: docs/reconciler.md.
		ReconcileEvidenceWindow: worker.DefaultEvidenceWindow,
		ReconcileEvidenceHold:   worker.DefaultEvidenceHold,
		ReceiverHeartbeat:       ordersync.DefaultHeartbeatInterval,
		RejectionFlushInterval:  webhook.DefaultRejectionFlushInterval,
		ReconcileInterval:       reconcileIntervalUnset,
		OutboxRetention:         7 * 24 * time.Hour,
		// Thirteen months and a few days: a yearly audit finds the whole of
		// the year it looks at, whenever in the next month it runs.
		AuditRetention: 400 * 24 * time.Hour,
		// A month of the Dead letters page's past jobs: what was replayed
		// is in the audit trail for longer.
		ReplayJobRetention: 30 * 24 * time.Hour,
		// A day lets a receiver deploy the new secret at its pace.
		EndpointSecretGrace: 24 * time.Hour,
		DeliveryConcurrency: dispatch.DefaultConcurrency,
		DeliveryTimeout:     dispatch.DefaultTimeout,
		LogLevel:            "info",
		LogFormat:           "text",
		TracingSampleRatio:  1,
		TracingServiceName:  "ordersync",
		// A load balancer's probe interval: its probes see the process
		// unready before its port closes (docs/deployment.md).
		ShutdownDrain: 5 * time.Second,
	}
}

// reconcileIntervalUnset is ReconcileInterval when no setting gave it.
const reconcileIntervalUnset time.Duration = -1
