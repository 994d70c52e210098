package app

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
)

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
