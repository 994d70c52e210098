package app

import (
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/tracing"
	"github.com/ordersync/ordersync/queue"
)

// Config is everything `ordersync serve` and the other commands need. It is
// read from a YAML file (--config or ORDERSYNC_CONFIG), then environment
// variables, then flags: each overrides the one before.
type Config struct {
	// APIBaseURL is the payment link service, e.g. https://api.example.com.
	APIBaseURL string
	// SecretKey is the merchant's API secret key (Bearer token).
	SecretKey string
	// WebhookSecrets verify X-H4B-Hmac-Sha256; several allow rotation.
	WebhookSecrets []string
	// InsecureNoWebhookSignature accepts unsigned webhooks. Never in production.
	InsecureNoWebhookSignature bool
	// Accounts are the further merchant accounts this deployment serves,
	// by name; the top-level api_base_url, secret_key and webhook_secrets
	// are the default account's. Their webhooks arrive on
	// /webhooks/paymentlink/{name}.
	Accounts map[string]AccountConfig
	// Role is what this process runs: "all", or a comma-separated list of
	// receiver, worker, relay and reconciler (which also prunes past the
	// retentions), so each part scales on its own.
	Role string

	// DataDir holds the embedded JetStream store and the default SQLite file.
	DataDir string
	// MinFreeSpace is the free space kept on the filesystems of the data
	// directory, the JetStream store and the SQLite file: "" for the
	// lesser of 1 GiB and 5%, a size ("2GiB"), a percentage ("10%") or
	// "off". Below it webhooks are refused with 503 and /readyz fails.
	MinFreeSpace string
	// statfs replaces the system's statfs in tests.
	statfs datadir.Statfs
	// DatabaseURL is a SQLite path (default DataDir/ordersync.db) or a
	// postgres:// URL.
	DatabaseURL string
	// MigrateOnStart creates or upgrades the schema at start-up; safe when
	// several processes start together.
	MigrateOnStart bool
	// Connection pool of the database.
	DBMaxOpenConns    int
	DBMaxIdleConns    int
	DBConnMaxLifetime time.Duration
	// NATSURL is an external NATS server or cluster; empty runs NATS embedded.
	NATSURL string
	// Credentials and TLS for an external NATS.
	NATSCredsFile string
	NATSToken     string
	NATSNKeyFile  string
	NATSTLSCA     string
	NATSTLSCert   string
	NATSTLSKey    string
	// NATSReplicas is the JetStream replica count of ordersync's streams.
	NATSReplicas int
	// NATSNamespace prefixes ordersync's subjects, streams, consumer and
	// leader bucket, so several deployments can share one NATS.
	NATSNamespace string
	// AckWait is how long a worker may hold a webhook event unsettled
	// before JetStream hands it to another: how late the events a killed
	// worker held come back. Workers report events still in progress well
	// within it.
	AckWait time.Duration
	// LeaderTTL is the lease of the relay's and the reconciler's leader on
	// an external NATS: how long a dead holder keeps the role before a
	// standby takes over. Every process of a deployment must use the same.
	LeaderTTL time.Duration
	// NATSPort opens a TCP port on the embedded server (0: none, in-process only).
	NATSPort int
	// JetStreamSync is the embedded server's fsync policy: "default" (writes
	// reach the OS at once, fsync every 2 min), "always", or an interval.
	JetStreamSync string

	// Listen is the webhook receiver's address.
	Listen string
	// TLSCertFile and TLSKeyFile serve webhooks over TLS.
	TLSCertFile string
	TLSKeyFile  string
	// TrustedProxies are the CIDRs whose X-Forwarded-For names the client.
	TrustedProxies []string
	// AdminListen is the back-office API's address.
	AdminListen string
	// ShutdownDrain is how long, on SIGTERM or SIGINT, /readyz answers 503
	// while both listeners keep serving, before they stop accepting: a
	// load balancer's probes see the process leave before its port closes.
	ShutdownDrain time.Duration
	// AdminTokens are the admin API's and the console's tokens, each with
	// a name (what the audit trail records) and a role; without one the
	// admin listener answers on loopback only. In the file an entry is a
	// plain token (an operator's, named token-N) or {name, role, token};
	// ORDERSYNC_ADMIN_TOKEN replaces the operators' and
	// ORDERSYNC_ADMIN_VIEWER_TOKEN the viewers'.
	AdminTokens []ordersync.AdminToken

	// Workers is how many upstream fetches run at once.
	Workers int
	// UpstreamRPS is a fixed cap on each account's requests per second to
	// the payment link service in this process; 0 (the default,
	// worker.DefaultUpstreamRPS) sets none. Either way the service's 429s
	// lower the rate for every request until it recovers
	// (docs/reconciler.md).
	UpstreamRPS float64
	// UpstreamTimeout bounds one upstream request.
	UpstreamTimeout time.Duration
	// ReconcileRPS is the reconciler's budget: the most upstream requests
	// per second it spends checking orders that are due (0 turns it off).
	ReconcileRPS float64
	// ReconcileEvidenceWindow and ReconcileEvidenceHold: on evidence that
	// webhooks were lost, the open orders active within the window before
	// it are checked densely until the record has been clean for the hold.
	ReconcileEvidenceWindow time.Duration
	ReconcileEvidenceHold   time.Duration
	// ReceiverHeartbeat is how often a receiver records its uptime in the
	// mirror, for the reconciler to see when none was listening.
	ReceiverHeartbeat time.Duration
	// RejectionFlushInterval is how often a receiver writes its counts of
	// requests rejected before verification to the rejection record.
	RejectionFlushInterval time.Duration
	// ReconcileInterval and ReconcileBudget are the settings of the
	// reconciler's passes, which a schedule replaced: reconcile_interval 0
	// still turns the reconciler off; other values are refused with what
	// replaces them (checkReconcile).
	ReconcileInterval time.Duration
	ReconcileBudget   int
	// OutboxRetention keeps published outbox messages this long (0: forever).
	OutboxRetention time.Duration
	// EventLogRetention keeps event log rows this long (0: forever).
	EventLogRetention time.Duration
	// AuditRetention keeps the audit trail this long (0: forever).
	AuditRetention time.Duration
	// ReplayJobRetention keeps the console's replay jobs this long after
	// they ended (0: forever).
	ReplayJobRetention time.Duration

	// Endpoints receive order events over HTTP (Standard Webhooks). They
	// are written into the database at every start: the file owns these
	// (their URL, events, description and secret follow it; one removed
	// from the file is deleted), while endpoints created through the admin
	// API live beside them, untouched by the file.
	Endpoints []EndpointConfig
	// EndpointSecretGrace is how long a replaced endpoint secret keeps
	// signing deliveries beside the new one.
	EndpointSecretGrace time.Duration
	// DeliveryConcurrency bounds the requests in flight to one endpoint,
	// and DeliveryTimeout one attempt, answer included: together they set
	// how many deliveries a second a slow endpoint can take.
	DeliveryConcurrency int
	DeliveryTimeout     time.Duration

	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string

	// TracingEndpoint is the OTLP/HTTP collector spans go to; empty (the
	// default) turns tracing off. TracingSampleRatio is the share of new
	// traces recorded, TracingServiceName their service.name. A restart
	// applies them.
	TracingEndpoint    string
	TracingSampleRatio float64
	TracingServiceName string
	// tracer replaces the one the tracing settings build, in tests.
	tracer *tracing.Tracer
}

// TracingConfig is the tracing settings as internal/tracing takes them.
func (c *Config) TracingConfig() tracing.Config {
	return tracing.Config{Endpoint: c.TracingEndpoint, SampleRatio: c.TracingSampleRatio, ServiceName: c.TracingServiceName}
}

// QueueConfig names ordersync's streams and consumer after the namespace:
// the default gives ORDERSYNC_EVENTS, ORDERSYNC_ORDERS, ordersync-worker.
func (c *Config) QueueConfig() queue.Config {
	up := strings.ToUpper(c.NATSNamespace)
	return queue.Config{
		SubjectPrefix: c.NATSNamespace, EventsStream: up + "_EVENTS", OrdersStream: up + "_ORDERS",
		Consumer: c.NATSNamespace + "-worker", Replicas: c.NATSReplicas, AckWait: c.AckWait,
	}
}

// DispatchConfig is the HTTP dispatcher's part of the settings; the
// program adds the ports it delivers through.
func (c *Config) DispatchConfig() dispatch.Config {
	return dispatch.Config{Concurrency: c.DeliveryConcurrency, Timeout: c.DeliveryTimeout}
}
