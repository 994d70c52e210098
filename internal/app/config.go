package app

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/tracing"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/webhook"
	"github.com/ordersync/ordersync/worker"
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

// setting is one configuration knob: its YAML key (the flag is the same
// with dashes), its environment variable, which commands take it as a flag,
// and its value. The file, environment variables and flags all go through
// the value's one parser, so each reports a bad value the same way.
type setting[T any] struct {
	key, env, usage string
	flag            string // when the flag is not the key with dashes
	// scope is the commands that take it as a flag beside serve, which
	// takes them all; every command reads it from the file and environment.
	scope Scope
	set   value[T]

	// replaced marks a setting kept only to say what replaced it; the
	// example config leaves it out.
	replaced bool
	// reload marks a setting serve's reload (SIGHUP) applies in place;
	// any other that changed is reported as needing a restart.
	reload bool
	// secret marks a credential, which may also come from a file named by
	// its _file variant (see fileKey), so that a secret mounted as a file
	// never has to be copied into the config or the environment.
	secret bool
}

// A secret setting's file variant: key secret_key_file, variable
// ORDERSYNC_SECRET_KEY_FILE, flag --secret-key-file. Its value is a path;
// the setting's value is the file's contents, trimmed, read again at every
// load (serve's reload included). A list's file holds its entries
// separated by commas or lines.
func (st setting[T]) fileKey() string  { return st.key + "_file" }
func (st setting[T]) fileEnv() string  { return st.env + "_FILE" }
func (st setting[T]) fileFlag() string { return st.flagName() + "-file" }

// parseFile sets a secret setting from the file at path.
func (st setting[T]) parseFile(c *T, path string) error {
	path = strings.TrimSpace(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the secret's file: %w", err)
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		return fmt.Errorf("the secret's file %s is empty", path)
	}
	if st.set.kind == "strings" {
		text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }), ",")
	}
	return st.set.parse(c, text)
}

// Scope is a set of the parts of the configuration a command needs.
type Scope uint8

const (
	scopeServe    Scope = 0         // serve only
	ScopeMirror   Scope = 1 << iota // commands that open the mirror
	ScopeUpstream                   // commands that call the payment link service
	ScopeAdmin                      // commands that ask a running serve's admin API
	ScopeAll      = ScopeMirror | ScopeUpstream | ScopeAdmin
)

// value is how a setting reads and shows its text, in what holds it: the
// Config, or one account or endpoint of it.
type value[T any] struct {
	kind  string // the flag's type in help: string, strings, int, float, bool, duration
	parse func(c *T, v string) error
	show  func(c *T) string
	// node, when set, reads the setting's YAML value itself: for a value
	// the file can give in a richer shape than a flag's text.
	node func(c *T, n *yaml.Node) error
}

func str[T any](dst func(*T) *string) value[T] {
	return value[T]{kind: "string",
		parse: func(c *T, v string) error { *dst(c) = v; return nil },
		show:  func(c *T) string { return *dst(c) }}
}

func list[T any](dst func(*T) *[]string) value[T] {
	return value[T]{kind: "strings",
		parse: func(c *T, v string) error { *dst(c) = splitList(v); return nil },
		show:  func(c *T) string { return strings.Join(*dst(c), ",") }}
}

func integer[T any](dst func(*T) *int) value[T] {
	return value[T]{kind: "int",
		parse: func(c *T, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not a whole number", v)
			}
			*dst(c) = n
			return nil
		},
		show: func(c *T) string { return strconv.Itoa(*dst(c)) }}
}

func number[T any](dst func(*T) *float64) value[T] {
	return value[T]{kind: "float",
		parse: func(c *T, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return fmt.Errorf("%q is not a number", v)
			}
			*dst(c) = f
			return nil
		},
		show: func(c *T) string { return strconv.FormatFloat(*dst(c), 'g', -1, 64) }}
}

func boolean[T any](dst func(*T) *bool) value[T] {
	return value[T]{kind: "bool",
		parse: func(c *T, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not true or false", v)
			}
			*dst(c) = b
			return nil
		},
		show: func(c *T) string { return strconv.FormatBool(*dst(c)) }}
}

func duration[T any](dst func(*T) *time.Duration) value[T] {
	return value[T]{kind: "duration",
		parse: func(c *T, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not a duration (write it like 90s, 5m or 24h)", v)
			}
			*dst(c) = d
			return nil
		},
		show: func(c *T) string {
			if *dst(c) == 0 {
				return "0"
			}
			return dst(c).String()
		}}
}

var settings = []setting[Config]{
	{key: "api_base_url", env: "ORDERSYNC_API_BASE_URL", usage: "payment link service base URL", scope: ScopeUpstream, set: str(func(c *Config) *string { return &c.APIBaseURL })},
	{key: "secret_key", secret: true, reload: true, env: "ORDERSYNC_SECRET_KEY", usage: "payment link service secret key", scope: ScopeUpstream, set: str(func(c *Config) *string { return &c.SecretKey })},
	{key: "webhook_secrets", secret: true, reload: true, flag: "webhook-secret", env: "ORDERSYNC_WEBHOOK_SECRET", usage: "webhook signing secrets, comma-separated (several during rotation)", set: list(func(c *Config) *[]string { return &c.WebhookSecrets })},
	{key: "insecure_no_webhook_signature", env: "ORDERSYNC_INSECURE_NO_WEBHOOK_SIGNATURE", usage: "accept unsigned webhooks (never in production)", set: boolean(func(c *Config) *bool { return &c.InsecureNoWebhookSignature })},
	{key: "role", env: "ORDERSYNC_ROLE", usage: "what this process runs: all, or a comma-separated list of receiver, worker, relay, reconciler", set: str(func(c *Config) *string { return &c.Role })},
	{key: "data_dir", env: "ORDERSYNC_DATA_DIR", usage: "directory for the embedded JetStream store and the default SQLite file", scope: ScopeMirror, set: str(func(c *Config) *string { return &c.DataDir })},
	{key: "min_free_space", env: "ORDERSYNC_MIN_FREE_SPACE", usage: "free space kept on the data's filesystems, a size (2GiB), a percentage (10%) or off; below it webhooks are refused (default the lesser of 1GiB and 5%)", set: str(func(c *Config) *string { return &c.MinFreeSpace })},
	{key: "database_url", secret: true, env: "ORDERSYNC_DATABASE_URL", usage: "SQLite path or postgres:// URL (default DATA_DIR/ordersync.db)", scope: ScopeMirror, set: str(func(c *Config) *string { return &c.DatabaseURL })},
	{key: "migrate_on_start", env: "ORDERSYNC_MIGRATE_ON_START", usage: "create or upgrade the schema at start-up", set: boolean(func(c *Config) *bool { return &c.MigrateOnStart })},
	{key: "db_max_open_conns", env: "ORDERSYNC_DB_MAX_OPEN_CONNS", usage: "database connections at most (PostgreSQL; SQLite reads)", scope: ScopeMirror, set: integer(func(c *Config) *int { return &c.DBMaxOpenConns })},
	{key: "db_max_idle_conns", env: "ORDERSYNC_DB_MAX_IDLE_CONNS", usage: "idle database connections kept (0: as many as db_max_open_conns)", scope: ScopeMirror, set: integer(func(c *Config) *int { return &c.DBMaxIdleConns })},
	{key: "db_conn_max_lifetime", env: "ORDERSYNC_DB_CONN_MAX_LIFETIME", usage: "close database connections older than this (0: never)", scope: ScopeMirror, set: duration(func(c *Config) *time.Duration { return &c.DBConnMaxLifetime })},
	{key: "nats_url", secret: true, env: "ORDERSYNC_NATS_URL", usage: "external NATS server or cluster URL(s); empty runs NATS embedded", set: str(func(c *Config) *string { return &c.NATSURL })},
	{key: "nats_creds_file", env: "ORDERSYNC_NATS_CREDS_FILE", usage: "NATS credentials file", set: str(func(c *Config) *string { return &c.NATSCredsFile })},
	{key: "nats_token", secret: true, env: "ORDERSYNC_NATS_TOKEN", usage: "NATS token", set: str(func(c *Config) *string { return &c.NATSToken })},
	{key: "nats_nkey_file", env: "ORDERSYNC_NATS_NKEY_FILE", usage: "NATS NKey seed file", set: str(func(c *Config) *string { return &c.NATSNKeyFile })},
	{key: "nats_tls_ca", env: "ORDERSYNC_NATS_TLS_CA", usage: "CA certificate to verify the NATS servers", set: str(func(c *Config) *string { return &c.NATSTLSCA })},
	{key: "nats_tls_cert", env: "ORDERSYNC_NATS_TLS_CERT", usage: "client certificate for NATS", set: str(func(c *Config) *string { return &c.NATSTLSCert })},
	{key: "nats_tls_key", env: "ORDERSYNC_NATS_TLS_KEY", usage: "client key for NATS", set: str(func(c *Config) *string { return &c.NATSTLSKey })},
	{key: "nats_replicas", env: "ORDERSYNC_NATS_REPLICAS", usage: "JetStream stream replicas (3 on a cluster)", set: integer(func(c *Config) *int { return &c.NATSReplicas })},
	{key: "nats_namespace", env: "ORDERSYNC_NATS_NAMESPACE", usage: "prefix of subjects (NAMESPACE.orders.paid), streams, consumer and leader bucket on a shared NATS", set: str(func(c *Config) *string { return &c.NATSNamespace })},
	{key: "ack_wait", env: "ORDERSYNC_ACK_WAIT", usage: "how long a worker may hold a webhook event before it is handed to another; the events of a worker that died come back after it (default 30s, at least 15s)", set: duration(func(c *Config) *time.Duration { return &c.AckWait })},
	{key: "leader_ttl", env: "ORDERSYNC_LEADER_TTL", usage: "lease of the relay and reconciler leaders on an external NATS: the failover time (same in every process)", set: duration(func(c *Config) *time.Duration { return &c.LeaderTTL })},
	{key: "nats_port", env: "ORDERSYNC_NATS_PORT", usage: "TCP port for the embedded NATS server; 0 = in-process only", set: integer(func(c *Config) *int { return &c.NATSPort })},
	{key: "jetstream_sync", env: "ORDERSYNC_JETSTREAM_SYNC", usage: "embedded JetStream fsync policy: default, always or an interval like 1s", set: str(func(c *Config) *string { return &c.JetStreamSync })},
	{key: "listen", env: "ORDERSYNC_LISTEN", usage: "webhook receiver address", set: str(func(c *Config) *string { return &c.Listen })},
	{key: "tls_cert_file", env: "ORDERSYNC_TLS_CERT_FILE", usage: "serve webhooks over TLS with this certificate", set: str(func(c *Config) *string { return &c.TLSCertFile })},
	{key: "tls_key_file", env: "ORDERSYNC_TLS_KEY_FILE", usage: "the key of tls_cert_file", set: str(func(c *Config) *string { return &c.TLSKeyFile })},
	{key: "trusted_proxies", env: "ORDERSYNC_TRUSTED_PROXIES", usage: "CIDRs of proxies whose X-Forwarded-For is believed, comma-separated", set: list(func(c *Config) *[]string { return &c.TrustedProxies })},
	{key: "admin_listen", env: "ORDERSYNC_ADMIN_LISTEN", usage: "admin API address (beyond loopback only with admin tokens)", scope: ScopeAdmin, set: str(func(c *Config) *string { return &c.AdminListen })},
	{key: "admin_tokens", secret: true, reload: true, env: "ORDERSYNC_ADMIN_TOKEN", usage: "operator tokens of the admin API and console, comma-separated (the client commands send the first operator's); in the file also {name, role, token} entries", set: adminTokens(ordersync.RoleOperator)},
	{key: "admin_viewer_tokens", secret: true, reload: true, env: "ORDERSYNC_ADMIN_VIEWER_TOKEN", usage: "viewer tokens (read, never act) of the admin API and console, comma-separated", set: adminTokens(ordersync.RoleViewer)},
	{key: "shutdown_drain", env: "ORDERSYNC_SHUTDOWN_DRAIN", usage: "on SIGTERM, how long /readyz answers 503 (draining) while the listeners keep serving, before they close (0: close at once)", set: duration(func(c *Config) *time.Duration { return &c.ShutdownDrain })},
	{key: "workers", env: "ORDERSYNC_WORKERS", usage: "concurrent upstream fetches", set: integer(func(c *Config) *int { return &c.Workers })},
	{key: "upstream_rps", env: "ORDERSYNC_UPSTREAM_RPS", usage: "fixed cap on each account's upstream requests per second in this process, 0 = none (the default: the rate is learned from the service's 429s, and checks spend only what webhook-driven fetches leave)", set: number(func(c *Config) *float64 { return &c.UpstreamRPS })},
	{key: "upstream_timeout", env: "ORDERSYNC_UPSTREAM_TIMEOUT", usage: "timeout of one upstream request", scope: ScopeUpstream, set: duration(func(c *Config) *time.Duration { return &c.UpstreamTimeout })},
	{key: "reconcile_rps", env: "ORDERSYNC_RECONCILE_RPS", usage: "upstream requests per second the reconciler may spend on checks that are due (for a minute after evidence of lost webhooks, up to 1.5 times as many), 0 = reconciler off", set: number(func(c *Config) *float64 { return &c.ReconcileRPS })},
	{key: "reconcile_evidence_window", env: "ORDERSYNC_RECONCILE_EVIDENCE_WINDOW", usage: "on evidence of lost webhooks, open orders active within this long before it are checked densely (default 1h: the orders of the 5-minute promise; longer finds a quiet order's lost change sooner at about 14 requests an hour for each order it adds)", set: duration(func(c *Config) *time.Duration { return &c.ReconcileEvidenceWindow })},
	{key: "reconcile_evidence_hold", env: "ORDERSYNC_RECONCILE_EVIDENCE_HOLD", usage: "how long the record of lost webhooks must stay clean before dense checks relax (default 30m: each affected order checked about 7 times meanwhile)", set: duration(func(c *Config) *time.Duration { return &c.ReconcileEvidenceHold })},
	{key: "receiver_heartbeat", env: "ORDERSYNC_RECEIVER_HEARTBEAT", usage: "how often a receiver records its uptime in the mirror; three missed beats count as away (default 10s)", set: duration(func(c *Config) *time.Duration { return &c.ReceiverHeartbeat })},
	{key: "rejection_flush_interval", env: "ORDERSYNC_REJECTION_FLUSH_INTERVAL", usage: "how often a receiver writes its counts of rejected (unsigned, wrongly signed) requests to the rejection record (default 10s)", set: duration(func(c *Config) *time.Duration { return &c.RejectionFlushInterval })},
	{key: "reconcile_interval", env: "ORDERSYNC_RECONCILE_INTERVAL", usage: "replaced by reconcile_rps; only 0 (reconciler off) is still accepted", replaced: true, set: duration(func(c *Config) *time.Duration { return &c.ReconcileInterval })},
	{key: "reconcile_budget", env: "ORDERSYNC_RECONCILE_BUDGET", usage: "replaced by reconcile_rps (requests per second); refused", replaced: true, set: integer(func(c *Config) *int { return &c.ReconcileBudget })},
	{key: "outbox_retention", env: "ORDERSYNC_OUTBOX_RETENTION", usage: "how long published outbox messages are kept, 0 = forever", set: duration(func(c *Config) *time.Duration { return &c.OutboxRetention })},
	{key: "event_log_retention", env: "ORDERSYNC_EVENT_LOG_RETENTION", usage: "how long event log and delivery log rows are kept (an order's event log), 0 = forever", set: duration(func(c *Config) *time.Duration { return &c.EventLogRetention })},
	{key: "audit_retention", env: "ORDERSYNC_AUDIT_RETENTION", usage: "how long the audit trail of actions is kept, 0 = forever", set: duration(func(c *Config) *time.Duration { return &c.AuditRetention })},
	{key: "replay_job_retention", env: "ORDERSYNC_REPLAY_JOB_RETENTION", usage: "how long the console's replay jobs are kept after they ended, 0 = forever", set: duration(func(c *Config) *time.Duration { return &c.ReplayJobRetention })},
	{key: "endpoint_secret_grace", env: "ORDERSYNC_ENDPOINT_SECRET_GRACE", usage: "how long a replaced endpoint secret keeps signing deliveries", set: duration(func(c *Config) *time.Duration { return &c.EndpointSecretGrace })},
	{key: "delivery_concurrency", env: "ORDERSYNC_DELIVERY_CONCURRENCY", usage: "requests in flight to one HTTP endpoint at most", set: integer(func(c *Config) *int { return &c.DeliveryConcurrency })},
	{key: "delivery_timeout", env: "ORDERSYNC_DELIVERY_TIMEOUT", usage: "timeout of one delivery attempt to an HTTP endpoint, answer included", set: duration(func(c *Config) *time.Duration { return &c.DeliveryTimeout })},
	{key: "log_level", reload: true, env: "ORDERSYNC_LOG_LEVEL", usage: "debug, info, warn or error", set: str(func(c *Config) *string { return &c.LogLevel })},
	{key: "log_format", env: "ORDERSYNC_LOG_FORMAT", usage: "text or json", set: str(func(c *Config) *string { return &c.LogFormat })},
	{key: "tracing_endpoint", env: "ORDERSYNC_TRACING_ENDPOINT", usage: "OpenTelemetry collector's OTLP/HTTP URL spans are exported to (http://collector:4318; /v1/traces added when no path); empty = tracing off", set: str(func(c *Config) *string { return &c.TracingEndpoint })},
	{key: "tracing_sample_ratio", env: "ORDERSYNC_TRACING_SAMPLE_RATIO", usage: "share of new traces recorded, 0 to 1 (a trace begun upstream follows its parent)", set: number(func(c *Config) *float64 { return &c.TracingSampleRatio })},
	{key: "tracing_service_name", env: "ORDERSYNC_TRACING_SERVICE_NAME", usage: "service.name of the exported spans", set: str(func(c *Config) *string { return &c.TracingServiceName })},
}

// adminTokens is the value of the tokens of one role. Its text, from the
// environment or a flag, is a list of plain tokens that replaces the
// tokens of that role (named token-N for operators, viewer-N for viewers)
// and keeps the other role's. In the file, admin_tokens is a list whose
// entries are plain tokens (operators) or {name, role, token}, and it
// replaces every token the file gave before.
func adminTokens(role ordersync.Role) value[Config] {
	prefix := "token-"
	if role == ordersync.RoleViewer {
		prefix = "viewer-"
	}
	plain := func(tokens []string) []ordersync.AdminToken {
		out := make([]ordersync.AdminToken, len(tokens))
		for i, t := range tokens {
			out[i] = ordersync.AdminToken{Name: fmt.Sprintf("%s%d", prefix, i+1), Role: role, Token: t}
		}
		return out
	}
	v := value[Config]{kind: "strings",
		parse: func(c *Config, v string) error {
			others := slices.DeleteFunc(slices.Clone(c.AdminTokens), func(t ordersync.AdminToken) bool { return t.Role == role })
			c.AdminTokens = append(others, plain(splitList(v))...)
			return nil
		},
		show: func(c *Config) string {
			var out []string
			for _, t := range c.AdminTokens {
				if t.Role == role {
					out = append(out, t.Token)
				}
			}
			return strings.Join(out, ",")
		}}
	if role == ordersync.RoleOperator {
		v.node = func(c *Config, n *yaml.Node) error {
			tokens, err := adminTokensNode(n, prefix)
			if err != nil {
				return err
			}
			c.AdminTokens = tokens
			return nil
		}
	}
	return v
}

// adminTokensNode reads admin_tokens from the file: one token, or a list
// of plain tokens and {name, role, token} mappings.
func adminTokensNode(n *yaml.Node, prefix string) ([]ordersync.AdminToken, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []ordersync.AdminToken
	for i, item := range items {
		t := ordersync.AdminToken{Name: fmt.Sprintf("%s%d", prefix, i+1), Role: ordersync.RoleOperator}
		switch item.Kind {
		case yaml.ScalarNode:
			t.Token = item.Value
		case yaml.MappingNode:
			for j := 0; j+1 < len(item.Content); j += 2 {
				k, v := item.Content[j], item.Content[j+1]
				if v.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("entry %d (line %d): %s: want a single value", i+1, v.Line, k.Value)
				}
				switch k.Value {
				case "name":
					t.Name = v.Value
				case "token":
					t.Token = v.Value
				case "role":
					r, err := ordersync.ParseRole(v.Value)
					if err != nil {
						return nil, fmt.Errorf("entry %d (line %d): %w", i+1, v.Line, err)
					}
					t.Role = r
				default:
					return nil, fmt.Errorf("entry %d (line %d): %q is not a token setting (want name, role, token)", i+1, k.Line, k.Value)
				}
			}
		default:
			return nil, fmt.Errorf("entry %d (line %d): want a token or {name, role, token}", i+1, item.Line)
		}
		out = append(out, t)
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (st setting[T]) flagName() string {
	if st.flag != "" {
		return st.flag
	}
	return strings.ReplaceAll(st.key, "_", "-")
}

// ConfigFlags are a command's flags of settings. Only the flags given
// override the file and the environment.
type ConfigFlags struct {
	path string
	fs   *pflag.FlagSet
}

// AddConfigFlags adds --config and a typed flag, with its default, for
// each setting in scope: every setting for serve (scopeAll), the few
// that reach the mirror, the service or the admin API for the others.
func AddConfigFlags(fs *pflag.FlagSet, sc Scope) *ConfigFlags {
	f := &ConfigFlags{fs: fs}
	fs.StringVar(&f.path, "config", "", "YAML config file (env ORDERSYNC_CONFIG; see configs/ordersync.example.yaml)")
	defaults := DefaultConfig()
	for _, st := range settings {
		if sc != ScopeAll && st.scope&sc == 0 {
			continue
		}
		fl := fs.VarPF(&settingFlag{kind: st.set.kind, text: st.set.show(&defaults)}, st.flagName(), "", st.usage+" ("+st.env+")")
		if st.set.kind == "bool" {
			fl.NoOptDefVal = "true"
		}
		// A replaced setting is read, to say what replaces it, and hidden
		// from the help.
		fl.Hidden = st.replaced
		if st.secret {
			fs.VarP(&settingFlag{kind: "string"}, st.fileFlag(), "", "file holding the "+st.flagName()+" setting, trimmed; read again on reload ("+st.fileEnv()+")")
		}
	}
	return f
}

// settingFlag holds a flag's text until load parses it with its setting,
// after the file and the environment.
type settingFlag struct{ kind, text string }

func (f *settingFlag) String() string     { return f.text }
func (f *settingFlag) Set(v string) error { f.text = v; return nil }
func (f *settingFlag) Type() string       { return f.kind }

// Load builds the Config: defaults, then the file, then the environment,
// then the flags that were given. It reports every bad value at once, each
// with where it came from: the file's line, the variable or the flag.
func (f *ConfigFlags) Load(getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	var errs []error
	path := f.path
	if path == "" {
		path = getenv("ORDERSYNC_CONFIG")
	}
	if path != "" {
		errs = append(errs, loadFile(&cfg, path)...)
	}
	errs = append(errs, loadAccountsEnv(&cfg, getenv)...)
	errs = append(errs, loadEnv(&cfg, settings, "", getenv)...)
	for _, st := range settings {
		fl, file := f.fs.Lookup(st.flagName()), f.fs.Lookup(st.fileFlag())
		given, fileGiven := fl != nil && fl.Changed, st.secret && file != nil && file.Changed
		switch {
		case given && fileGiven:
			errs = append(errs, fmt.Errorf("--%s and --%s: give one of them", fl.Name, file.Name))
		case given:
			if err := st.set.parse(&cfg, fl.Value.String()); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", fl.Name, err))
			}
		case fileGiven:
			if err := st.parseFile(&cfg, file.Value.String()); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", file.Name, err))
			}
		}
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = datadir.DatabaseFile(cfg.DataDir)
	}
	return cfg, joinProblems(errs)
}

// loadFile reads a YAML config file into cfg through the settings' own
// parsers, so that a bad value is named by its key and line in the file.
func loadFile(cfg *Config, path string) []error {
	b, err := os.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("read config file: %w", err)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return []error{fmt.Errorf("config file %s is not valid YAML: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if len(doc.Content) == 0 { // an empty file
		return nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("config file %s, line %d: want settings as key: value lines", path, top.Line)}
	}
	at := func(n *yaml.Node, key string, err error) error {
		return fmt.Errorf("config file %s, line %d: %s: %w", path, n.Line, key, err)
	}
	return loadMapping(cfg, settings, top, "", func(k, v *yaml.Node) []error {
		switch k.Value {
		case "accounts":
			return loadAccounts(cfg, v, at)
		case "endpoints":
			return loadEndpoints(cfg, v, at)
		}
		return []error{at(k, k.Value, errors.New("not a setting (the settings are listed in configs/ordersync.example.yaml)"))}
	}, at)
}

// nodeText is a YAML value as a setting's text: a scalar as it is, a list
// (for a setting that takes several) joined with commas.
func nodeText(n *yaml.Node, kind string) (string, error) {
	switch {
	case n.Kind == yaml.ScalarNode:
		return n.Value, nil
	case n.Kind == yaml.SequenceNode && kind == "strings":
		parts := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return "", errors.New("want a list of values")
			}
			parts = append(parts, item.Value)
		}
		return strings.Join(parts, ","), nil
	case kind == "strings":
		return "", errors.New("want a value or a list of values")
	}
	return "", errors.New("want a single value")
}

// joinProblems is every problem of a configuration, one per line.
func joinProblems(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &problems{errs: errs}
}

type problems struct{ errs []error }

func (p *problems) Error() string {
	lines := make([]string, len(p.errs))
	for i, err := range p.errs {
		lines[i] = "  " + err.Error()
	}
	return fmt.Sprintf("%d problems in the configuration:\n%s", len(p.errs), strings.Join(lines, "\n"))
}

func (p *problems) Unwrap() []error { return p.errs }

// minAckWait is the shortest ack_wait: three times the interval at which
// the pool reports the events it still holds (worker.PoolConfig's
// ExtendInterval, 5 s), so that a held event is reported before it can be
// redelivered.
const minAckWait = 15 * time.Second

// ValidateServe names every missing or wrong setting `serve` needs, all at
// once.
func (c *Config) ValidateServe() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := AccountSettings(ordersync.DefaultAccount)
	if c.APIBaseURL == "" {
		bad("missing setting: %s", names.APIBaseURL)
	} else if err := CheckBaseURL(c.APIBaseURL); err != nil {
		bad("bad setting: %s: %w", accountBaseURL.key, err)
	}
	if c.SecretKey == "" {
		bad("missing setting: %s", names.SecretKey)
	}
	if len(c.WebhookSecrets) == 0 && !c.InsecureNoWebhookSignature {
		bad("missing setting: %s; to accept unsigned webhooks anyway, set insecure_no_webhook_signature", names.WebhookSecrets)
	}
	if c.Workers < 1 {
		bad("bad setting: workers must be ≥ 1, got %d", c.Workers)
	}
	if c.OutboxRetention < 0 || c.EventLogRetention < 0 {
		bad("bad setting: outbox_retention and event_log_retention must not be negative, got %s and %s", c.OutboxRetention, c.EventLogRetention)
	}
	if c.DataDir == "" {
		bad("missing setting: data_dir (ORDERSYNC_DATA_DIR or --data-dir)")
	}
	errs = append(errs, c.checkAccounts()...)
	if !ordersync.ValidName(c.NATSNamespace) {
		bad("bad setting: nats_namespace %q (want %s)", c.NATSNamespace, ordersync.NameRule)
	}
	if c.ReconcileEvidenceWindow <= 0 || c.ReconcileEvidenceHold <= 0 || c.ReceiverHeartbeat <= 0 || c.RejectionFlushInterval <= 0 {
		bad("bad setting: reconcile_evidence_window, reconcile_evidence_hold, receiver_heartbeat and rejection_flush_interval must be > 0, got %s, %s, %s, %s",
			c.ReconcileEvidenceWindow, c.ReconcileEvidenceHold, c.ReceiverHeartbeat, c.RejectionFlushInterval)
	}
	if c.AckWait < minAckWait {
		bad("bad setting: ack_wait must be ≥ %s (three times the interval at which workers report events in progress), got %s", minAckWait, c.AckWait)
	}
	if c.LeaderTTL < 300*time.Millisecond {
		bad("bad setting: leader_ttl must be ≥ 300ms, got %s", c.LeaderTTL)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		bad("bad setting: tls_cert_file and tls_key_file go together")
	}
	if c.ShutdownDrain < 0 {
		bad("bad setting: shutdown_drain must not be negative, got %s", c.ShutdownDrain)
	}
	if c.EndpointSecretGrace < 0 {
		bad("bad setting: endpoint_secret_grace must not be negative, got %s", c.EndpointSecretGrace)
	}
	if c.DeliveryConcurrency < 1 {
		bad("bad setting: delivery_concurrency must be at least 1, got %d", c.DeliveryConcurrency)
	}
	if c.DeliveryTimeout <= 0 {
		bad("bad setting: delivery_timeout must be positive, got %s", c.DeliveryTimeout)
	}
	if c.AuditRetention < 0 {
		bad("bad setting: audit_retention must not be negative, got %s", c.AuditRetention)
	}
	if c.ReplayJobRetention < 0 {
		bad("bad setting: replay_job_retention must not be negative, got %s", c.ReplayJobRetention)
	}
	for _, check := range []func() error{
		func() error { _, err := parseRoles(c.Role); return err },
		func() error { return c.checkAdminTokens() },
		func() error { _, err := parseCIDRs(c.TrustedProxies); return err },
		func() error {
			if _, err := datadir.ParseWatermark(c.MinFreeSpace); err != nil {
				return fmt.Errorf("bad setting: min_free_space %w", err)
			}
			return nil
		},
		c.checkAdminListen,
		c.checkReconcile,
		func() error {
			if err := c.TracingConfig().Validate(); err != nil {
				return fmt.Errorf("bad setting: %w", err)
			}
			return nil
		},
		func() error { _, err := c.EndpointParams(); return err },
	} {
		if err := check(); err != nil {
			errs = append(errs, err)
		}
	}
	return joinProblems(errs)
}

// CheckBaseURL refuses a base URL the client could not call, in the terms
// of the setting rather than of the client's code.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL (like https://api.example.com)", s)
	}
	return nil
}

// reconcileIntervalUnset is ReconcileInterval when no setting gave it.
const reconcileIntervalUnset time.Duration = -1

// checkReconcile refuses the settings of the reconciler's former passes,
// saying what replaces them, except reconcile_interval 0, which still turns
// the reconciler off.
func (c *Config) checkReconcile() error {
	const replaced = "the reconciler now checks each order when its schedule says it is due, " +
		"spending reconcile_rps upstream requests per second (ORDERSYNC_RECONCILE_RPS or --reconcile-rps, default %v; up to 1.5 times as many for a minute after evidence of lost webhooks); " +
		"reconcile_interval: 0 or reconcile_rps: 0 turns it off"
	switch {
	case c.ReconcileBudget != 0:
		interval, remove := time.Minute, "reconcile_budget"
		if c.ReconcileInterval > 0 {
			interval, remove = c.ReconcileInterval, "reconcile_budget and reconcile_interval"
		}
		return fmt.Errorf("bad setting: reconcile_budget %d (orders per pass, %.2f requests per second with passes every %s) is replaced by reconcile_rps; "+
			replaced+"; remove %s", c.ReconcileBudget, float64(c.ReconcileBudget)/interval.Seconds(), interval, worker.DefaultReconcileBudget, remove)
	case c.ReconcileInterval > 0:
		return fmt.Errorf("bad setting: reconcile_interval %s: the reconciler no longer runs in passes; "+replaced+
			"; remove reconcile_interval", c.ReconcileInterval, worker.DefaultReconcileBudget)
	case c.ReconcileRPS < 0 || math.IsNaN(c.ReconcileRPS) || math.IsInf(c.ReconcileRPS, 0):
		return fmt.Errorf("bad setting: reconcile_rps must be a finite number ≥ 0, got %v", c.ReconcileRPS)
	}
	return nil
}

// reconcileOn reports whether this deployment runs the reconciler.
func (c *Config) reconcileOn() bool {
	return c.ReconcileRPS > 0 && c.ReconcileInterval != 0
}

// roles is what one process runs.
type roles struct{ receiver, worker, relay, reconciler bool }

func parseRoles(s string) (roles, error) {
	var r roles
	for _, name := range splitList(s) {
		switch strings.ToLower(name) {
		case "all":
			r = roles{true, true, true, true}
		case "receiver":
			r.receiver = true
		case "worker":
			r.worker = true
		case "relay":
			r.relay = true
		case "reconciler":
			r.reconciler = true
		default:
			return r, fmt.Errorf("bad setting: role %q (want all, or a list of receiver, worker, relay, reconciler)", name)
		}
	}
	if r == (roles{}) {
		return r, errors.New("missing setting: role (all, or a list of receiver, worker, relay, reconciler)")
	}
	return r, nil
}

func parseCIDRs(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if a, aerr := netip.ParseAddr(s); aerr == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			} else {
				return nil, fmt.Errorf("bad setting: trusted_proxies entry %q is not a CIDR or an address", s)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// checkAdminTokens names every token that would make the roles or the
// audit trail ambiguous.
func (c *Config) checkAdminTokens() error {
	if err := ordersync.ValidateAdminTokens(c.AdminTokens); err != nil {
		return fmt.Errorf("bad setting: admin_tokens: %w", err)
	}
	return nil
}

// checkAdminListen refuses an admin address beyond loopback unless the API
// requires a token.
func (c *Config) checkAdminListen() error {
	host, _, err := net.SplitHostPort(c.AdminListen)
	if err != nil {
		return fmt.Errorf("bad setting: admin_listen %q: %w", c.AdminListen, err)
	}
	if host == "localhost" || len(c.AdminTokens) > 0 {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("bad setting: admin_listen %q is beyond loopback and no admin_tokens are set; "+
			"set ORDERSYNC_ADMIN_TOKEN (or admin_tokens) to expose the admin API", c.AdminListen)
	}
	return nil
}
