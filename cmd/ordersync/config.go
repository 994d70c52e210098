package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/queue"
)

// Config is everything `ordersync serve` and the other commands need. It is
// read from a YAML file (--config or ORDERSYNC_CONFIG), then environment
// variables, then flags: each overrides the one before.
type Config struct {
	// APIBaseURL is the payment link service, e.g. https://api.example.com.
	APIBaseURL string `yaml:"api_base_url"`
	// SecretKey is the merchant's API secret key (Bearer token).
	SecretKey string `yaml:"secret_key"`
	// WebhookSecrets verify X-H4B-Hmac-Sha256; several allow rotation.
	WebhookSecrets []string `yaml:"webhook_secrets"`
	// InsecureNoWebhookSignature accepts unsigned webhooks. Never in production.
	InsecureNoWebhookSignature bool `yaml:"insecure_no_webhook_signature"`
	// Accounts are the further merchant accounts this deployment serves,
	// by name; the top-level api_base_url, secret_key and webhook_secrets
	// are the default account's. Their webhooks arrive on
	// /webhooks/paymentlink/{name}.
	Accounts map[string]AccountConfig `yaml:"accounts"`
	// Role is what this process runs: "all", or a comma-separated list of
	// receiver, worker, relay and reconciler (which also prunes past the
	// retentions), so each part scales on its own.
	Role string `yaml:"role"`

	// DataDir holds the embedded JetStream store and the default SQLite file.
	DataDir string `yaml:"data_dir"`
	// DatabaseURL is a SQLite path (default DataDir/ordersync.db) or a
	// postgres:// URL.
	DatabaseURL string `yaml:"database_url"`
	// MigrateOnStart creates or upgrades the schema at start-up; safe when
	// several processes start together.
	MigrateOnStart bool `yaml:"migrate_on_start"`
	// Connection pool of the database.
	DBMaxOpenConns    int           `yaml:"db_max_open_conns"`
	DBMaxIdleConns    int           `yaml:"db_max_idle_conns"`
	DBConnMaxLifetime time.Duration `yaml:"db_conn_max_lifetime"`
	// NATSURL is an external NATS server or cluster; empty runs NATS embedded.
	NATSURL string `yaml:"nats_url"`
	// Credentials and TLS for an external NATS.
	NATSCredsFile string `yaml:"nats_creds_file"`
	NATSToken     string `yaml:"nats_token"`
	NATSNKeyFile  string `yaml:"nats_nkey_file"`
	NATSTLSCA     string `yaml:"nats_tls_ca"`
	NATSTLSCert   string `yaml:"nats_tls_cert"`
	NATSTLSKey    string `yaml:"nats_tls_key"`
	// NATSReplicas is the JetStream replica count of ordersync's streams.
	NATSReplicas int `yaml:"nats_replicas"`
	// NATSNamespace prefixes ordersync's subjects, streams, consumer and
	// leader bucket, so several deployments can share one NATS.
	NATSNamespace string `yaml:"nats_namespace"`
	// LeaderTTL is the lease of the relay's and the reconciler's leader on
	// an external NATS: how long a dead holder keeps the role before a
	// standby takes over. Every process of a deployment must use the same.
	LeaderTTL time.Duration `yaml:"leader_ttl"`
	// NATSPort opens a TCP port on the embedded server (0: none, in-process only).
	NATSPort int `yaml:"nats_port"`
	// JetStreamSync is the embedded server's fsync policy: "default" (writes
	// reach the OS at once, fsync every 2 min), "always", or an interval.
	JetStreamSync string `yaml:"jetstream_sync"`

	// Listen is the webhook receiver's address.
	Listen string `yaml:"listen"`
	// TLSCertFile and TLSKeyFile serve webhooks over TLS.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// TrustedProxies are the CIDRs whose X-Forwarded-For names the client.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// AdminListen is the back-office API's address.
	AdminListen string `yaml:"admin_listen"`
	// AdminTokens are the admin API's bearer tokens; without one it listens
	// on loopback only.
	AdminTokens []string `yaml:"admin_tokens"`

	// Workers is how many upstream fetches run at once.
	Workers int `yaml:"workers"`
	// UpstreamRPS caps requests per second to the payment link service (0: none).
	UpstreamRPS float64 `yaml:"upstream_rps"`
	// UpstreamTimeout bounds one upstream request.
	UpstreamTimeout time.Duration `yaml:"upstream_timeout"`
	// ReconcileInterval is how often the reconciler runs (0 disables it).
	ReconcileInterval time.Duration `yaml:"reconcile_interval"`
	// ReconcileBudget is how many orders one reconciler pass may re-fetch.
	ReconcileBudget int `yaml:"reconcile_budget"`
	// OutboxRetention keeps published outbox messages this long (0: forever).
	OutboxRetention time.Duration `yaml:"outbox_retention"`
	// EventLogRetention keeps event log rows this long (0: forever).
	EventLogRetention time.Duration `yaml:"event_log_retention"`

	// Endpoints receive order events over HTTP (Standard Webhooks). They
	// are written into the database at every start: the file owns these
	// (their URL, events, description and secret follow it; one removed
	// from the file is deleted), while endpoints created through the admin
	// API live beside them, untouched by the file.
	Endpoints []EndpointConfig `yaml:"endpoints"`
	// EndpointSecretGrace is how long a replaced endpoint secret keeps
	// signing deliveries beside the new one.
	EndpointSecretGrace time.Duration `yaml:"endpoint_secret_grace"`

	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json.
	LogFormat string `yaml:"log_format"`
}

// AccountConfig is one further merchant account: its own service, key and
// webhook secrets. ORDERSYNC_ACCOUNT_<NAME>_API_BASE_URL, _SECRET_KEY and
// _WEBHOOK_SECRET override the file (NAME in upper case, '-' as '_').
type AccountConfig struct {
	APIBaseURL     string   `yaml:"api_base_url"`
	SecretKey      string   `yaml:"secret_key"`
	WebhookSecrets []string `yaml:"webhook_secrets"`
}

// EndpointConfig is one HTTP endpoint of the file.
type EndpointConfig struct {
	// ID names the endpoint (letters, digits, _ and -); default "cfg-"
	// and a hash of the URL. Give one to keep it across URL changes.
	ID  string `yaml:"id"`
	URL string `yaml:"url"`
	// Secret signs deliveries: whsec_ and base64 of 24 to 64 bytes
	// (`openssl rand -base64 32`).
	Secret      string   `yaml:"secret"`
	Events      []string `yaml:"events"`
	Description string   `yaml:"description"`
	// RatePerSecond caps the requests sent to it (0: no cap).
	RatePerSecond float64 `yaml:"rate_per_second"`
}

// endpointParams validates the file's endpoints and returns them as the
// store takes them.
func (c *Config) endpointParams() ([]ordersync.EndpointParams, error) {
	out := make([]ordersync.EndpointParams, 0, len(c.Endpoints))
	seen := map[string]bool{}
	for i, e := range c.Endpoints {
		p := ordersync.EndpointParams{ID: e.ID, URL: e.URL, Description: e.Description, Secret: e.Secret, RatePerSecond: e.RatePerSecond}
		if e.RatePerSecond < 0 {
			return nil, fmt.Errorf("bad setting: endpoints[%d].rate_per_second must not be negative, got %v", i, e.RatePerSecond)
		}
		if p.ID == "" {
			sum := sha256.Sum256([]byte(e.URL))
			p.ID = "cfg-" + hex.EncodeToString(sum[:6])
		}
		for _, ev := range e.Events {
			p.Events = append(p.Events, ordersync.HookEvent(ev))
		}
		if !accountName.MatchString(p.ID) {
			return nil, fmt.Errorf("bad setting: endpoints[%d].id %q (want 1-64 of A-Z a-z 0-9 _ -)", i, p.ID)
		}
		if seen[p.ID] {
			return nil, fmt.Errorf("bad setting: endpoints[%d]: id %q twice (give each URL once, or distinct ids)", i, p.ID)
		}
		seen[p.ID] = true
		if err := ordersync.ValidateEndpointURL(p.URL); err != nil {
			return nil, fmt.Errorf("bad setting: endpoints[%d].url: %w", i, err)
		}
		if err := ordersync.ValidateHookEvents(p.Events); err != nil {
			return nil, fmt.Errorf("bad setting: endpoints[%d].events: %w", i, err)
		}
		if err := delivery.ValidateSecret(p.Secret); err != nil {
			return nil, fmt.Errorf("bad setting: endpoints[%d].secret: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// accountEnvPrefix is the environment prefix of an account's settings.
func accountEnvPrefix(name string) string {
	return "ORDERSYNC_ACCOUNT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_"
}

// queueConfig names ordersync's streams and consumer after the namespace:
// the default gives ORDERSYNC_EVENTS, ORDERSYNC_ORDERS, ordersync-worker.
func (c *Config) queueConfig() queue.Config {
	up := strings.ToUpper(c.NATSNamespace)
	return queue.Config{
		SubjectPrefix: c.NATSNamespace, EventsStream: up + "_EVENTS", OrdersStream: up + "_ORDERS",
		Consumer: c.NATSNamespace + "-worker", Replicas: c.NATSReplicas,
	}
}

// upstreams returns every account's service settings, the default's first.
func (c *Config) upstreams() map[string]AccountConfig {
	out := map[string]AccountConfig{ordersync.DefaultAccount: {APIBaseURL: c.APIBaseURL, SecretKey: c.SecretKey, WebhookSecrets: c.WebhookSecrets}}
	for name, a := range c.Accounts {
		out[name] = a
	}
	return out
}

var accountName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// defaultConfig holds every default, in one place.
func defaultConfig() Config {
	return Config{
		Role:              "all",
		DataDir:           "data",
		MigrateOnStart:    true,
		DBMaxOpenConns:    16,
		DBMaxIdleConns:    16,
		JetStreamSync:     "default",
		NATSReplicas:      1,
		NATSNamespace:     "ordersync",
		LeaderTTL:         10 * time.Second,
		Listen:            ":8080",
		AdminListen:       "127.0.0.1:9090",
		Workers:           64,
		UpstreamTimeout:   10 * time.Second,
		ReconcileInterval: time.Minute,
		ReconcileBudget:   200,
		OutboxRetention:   7 * 24 * time.Hour,
		// A day lets a receiver deploy the new secret at its pace.
		EndpointSecretGrace: 24 * time.Hour,
		LogLevel:            "info",
		LogFormat:           "text",
	}
}

// setting is one configuration knob: its YAML key (the flag is the same
// with dashes), its environment variable, and how a text value sets it.
// Environment variables and flags go through the same setter.
type setting struct {
	key, env, usage string
	flag            string // when the flag is not the key with dashes
	isBool          bool
	set             func(c *Config, v string) error
}

func str(dst func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *dst(c) = v; return nil }
}

func list(dst func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, v string) error { *dst(c) = splitList(v); return nil }
}

func integer(dst func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) (err error) { *dst(c), err = strconv.Atoi(v); return err }
}

func boolean(dst func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) (err error) { *dst(c), err = strconv.ParseBool(v); return err }
}

func duration(dst func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) (err error) { *dst(c), err = time.ParseDuration(v); return err }
}

var settings = []setting{
	{key: "api_base_url", env: "ORDERSYNC_API_BASE_URL", usage: "payment link service base URL", set: str(func(c *Config) *string { return &c.APIBaseURL })},
	{key: "secret_key", env: "ORDERSYNC_SECRET_KEY", usage: "payment link service secret key", set: str(func(c *Config) *string { return &c.SecretKey })},
	{key: "webhook_secrets", flag: "webhook-secret", env: "ORDERSYNC_WEBHOOK_SECRET", usage: "webhook signing secrets, comma-separated (several during rotation)", set: list(func(c *Config) *[]string { return &c.WebhookSecrets })},
	{key: "insecure_no_webhook_signature", env: "ORDERSYNC_INSECURE_NO_WEBHOOK_SIGNATURE", usage: "accept unsigned webhooks (never in production)", isBool: true, set: boolean(func(c *Config) *bool { return &c.InsecureNoWebhookSignature })},
	{key: "role", env: "ORDERSYNC_ROLE", usage: "what this process runs: all, or a comma-separated list of receiver, worker, relay, reconciler", set: str(func(c *Config) *string { return &c.Role })},
	{key: "data_dir", env: "ORDERSYNC_DATA_DIR", usage: "directory for the embedded JetStream store and the default SQLite file", set: str(func(c *Config) *string { return &c.DataDir })},
	{key: "database_url", env: "ORDERSYNC_DATABASE_URL", usage: "SQLite path or postgres:// URL (default DATA_DIR/ordersync.db)", set: str(func(c *Config) *string { return &c.DatabaseURL })},
	{key: "migrate_on_start", env: "ORDERSYNC_MIGRATE_ON_START", usage: "create or upgrade the schema at start-up", isBool: true, set: boolean(func(c *Config) *bool { return &c.MigrateOnStart })},
	{key: "db_max_open_conns", env: "ORDERSYNC_DB_MAX_OPEN_CONNS", usage: "database connections at most (PostgreSQL; SQLite reads)", set: integer(func(c *Config) *int { return &c.DBMaxOpenConns })},
	{key: "db_max_idle_conns", env: "ORDERSYNC_DB_MAX_IDLE_CONNS", usage: "idle database connections kept", set: integer(func(c *Config) *int { return &c.DBMaxIdleConns })},
	{key: "db_conn_max_lifetime", env: "ORDERSYNC_DB_CONN_MAX_LIFETIME", usage: "close database connections older than this (0: never)", set: duration(func(c *Config) *time.Duration { return &c.DBConnMaxLifetime })},
	{key: "nats_url", env: "ORDERSYNC_NATS_URL", usage: "external NATS server or cluster URL(s); empty runs NATS embedded", set: str(func(c *Config) *string { return &c.NATSURL })},
	{key: "nats_creds_file", env: "ORDERSYNC_NATS_CREDS_FILE", usage: "NATS credentials file", set: str(func(c *Config) *string { return &c.NATSCredsFile })},
	{key: "nats_token", env: "ORDERSYNC_NATS_TOKEN", usage: "NATS token", set: str(func(c *Config) *string { return &c.NATSToken })},
	{key: "nats_nkey_file", env: "ORDERSYNC_NATS_NKEY_FILE", usage: "NATS NKey seed file", set: str(func(c *Config) *string { return &c.NATSNKeyFile })},
	{key: "nats_tls_ca", env: "ORDERSYNC_NATS_TLS_CA", usage: "CA certificate to verify the NATS servers", set: str(func(c *Config) *string { return &c.NATSTLSCA })},
	{key: "nats_tls_cert", env: "ORDERSYNC_NATS_TLS_CERT", usage: "client certificate for NATS", set: str(func(c *Config) *string { return &c.NATSTLSCert })},
	{key: "nats_tls_key", env: "ORDERSYNC_NATS_TLS_KEY", usage: "client key for NATS", set: str(func(c *Config) *string { return &c.NATSTLSKey })},
	{key: "nats_replicas", env: "ORDERSYNC_NATS_REPLICAS", usage: "JetStream stream replicas (3 on a cluster)", set: integer(func(c *Config) *int { return &c.NATSReplicas })},
	{key: "nats_namespace", env: "ORDERSYNC_NATS_NAMESPACE", usage: "prefix of subjects (NAMESPACE.orders.paid), streams, consumer and leader bucket on a shared NATS", set: str(func(c *Config) *string { return &c.NATSNamespace })},
	{key: "leader_ttl", env: "ORDERSYNC_LEADER_TTL", usage: "lease of the relay and reconciler leaders on an external NATS: the failover time (same in every process)", set: duration(func(c *Config) *time.Duration { return &c.LeaderTTL })},
	{key: "nats_port", env: "ORDERSYNC_NATS_PORT", usage: "TCP port for the embedded NATS server; 0 = in-process only", set: integer(func(c *Config) *int { return &c.NATSPort })},
	{key: "jetstream_sync", env: "ORDERSYNC_JETSTREAM_SYNC", usage: "embedded JetStream fsync policy: default, always or an interval like 1s", set: str(func(c *Config) *string { return &c.JetStreamSync })},
	{key: "listen", env: "ORDERSYNC_LISTEN", usage: "webhook receiver address", set: str(func(c *Config) *string { return &c.Listen })},
	{key: "tls_cert_file", env: "ORDERSYNC_TLS_CERT_FILE", usage: "serve webhooks over TLS with this certificate", set: str(func(c *Config) *string { return &c.TLSCertFile })},
	{key: "tls_key_file", env: "ORDERSYNC_TLS_KEY_FILE", usage: "the key of tls_cert_file", set: str(func(c *Config) *string { return &c.TLSKeyFile })},
	{key: "trusted_proxies", env: "ORDERSYNC_TRUSTED_PROXIES", usage: "CIDRs of proxies whose X-Forwarded-For is believed, comma-separated", set: list(func(c *Config) *[]string { return &c.TrustedProxies })},
	{key: "admin_listen", env: "ORDERSYNC_ADMIN_LISTEN", usage: "admin API address (beyond loopback only with admin tokens)", set: str(func(c *Config) *string { return &c.AdminListen })},
	{key: "admin_tokens", flag: "admin-token", env: "ORDERSYNC_ADMIN_TOKEN", usage: "bearer tokens of the admin API, comma-separated", set: list(func(c *Config) *[]string { return &c.AdminTokens })},
	{key: "workers", env: "ORDERSYNC_WORKERS", usage: "concurrent upstream fetches", set: integer(func(c *Config) *int { return &c.Workers })},
	{key: "upstream_rps", env: "ORDERSYNC_UPSTREAM_RPS", usage: "cap on upstream requests per second, 0 = none", set: func(c *Config, v string) (err error) {
		c.UpstreamRPS, err = strconv.ParseFloat(v, 64)
		return err
	}},
	{key: "upstream_timeout", env: "ORDERSYNC_UPSTREAM_TIMEOUT", usage: "timeout of one upstream request", set: duration(func(c *Config) *time.Duration { return &c.UpstreamTimeout })},
	{key: "reconcile_interval", env: "ORDERSYNC_RECONCILE_INTERVAL", usage: "how often the reconciler runs, 0 disables it", set: duration(func(c *Config) *time.Duration { return &c.ReconcileInterval })},
	{key: "reconcile_budget", env: "ORDERSYNC_RECONCILE_BUDGET", usage: "orders one reconciler pass may re-fetch", set: integer(func(c *Config) *int { return &c.ReconcileBudget })},
	{key: "outbox_retention", env: "ORDERSYNC_OUTBOX_RETENTION", usage: "how long published outbox messages are kept, 0 = forever", set: duration(func(c *Config) *time.Duration { return &c.OutboxRetention })},
	{key: "event_log_retention", env: "ORDERSYNC_EVENT_LOG_RETENTION", usage: "how long event log rows are kept, 0 = forever", set: duration(func(c *Config) *time.Duration { return &c.EventLogRetention })},
	{key: "endpoint_secret_grace", env: "ORDERSYNC_ENDPOINT_SECRET_GRACE", usage: "how long a replaced endpoint secret keeps signing deliveries", set: duration(func(c *Config) *time.Duration { return &c.EndpointSecretGrace })},
	{key: "log_level", env: "ORDERSYNC_LOG_LEVEL", usage: "debug, info, warn or error", set: str(func(c *Config) *string { return &c.LogLevel })},
	{key: "log_format", env: "ORDERSYNC_LOG_FORMAT", usage: "text or json", set: str(func(c *Config) *string { return &c.LogFormat })},
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

func (st setting) flagName() string {
	if st.flag != "" {
		return st.flag
	}
	return strings.ReplaceAll(st.key, "_", "-")
}

// configFlags are the flags every pipeline command takes, one per setting.
// Only the flags given override the file and the environment.
type configFlags struct {
	path string
	fs   *pflag.FlagSet
}

func addConfigFlags(fs *pflag.FlagSet) *configFlags {
	f := &configFlags{fs: fs}
	fs.StringVar(&f.path, "config", "", "YAML config file (env ORDERSYNC_CONFIG; see configs/ordersync.example.yaml)")
	for _, st := range settings {
		fs.String(st.flagName(), "", st.usage+" ("+st.env+")")
		if st.isBool {
			fs.Lookup(st.flagName()).NoOptDefVal = "true"
		}
	}
	return f
}

// load builds the Config: defaults, then the file, then the environment,
// then the flags that were given.
func (f *configFlags) load(getenv func(string) string) (Config, error) {
	cfg := defaultConfig()
	path := f.path
	if path == "" {
		path = getenv("ORDERSYNC_CONFIG")
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	for name, a := range cfg.Accounts {
		prefix := accountEnvPrefix(name)
		if v := getenv(prefix + "API_BASE_URL"); v != "" {
			a.APIBaseURL = v
		}
		if v := getenv(prefix + "SECRET_KEY"); v != "" {
			a.SecretKey = v
		}
		if v := getenv(prefix + "WEBHOOK_SECRET"); v != "" {
			a.WebhookSecrets = splitList(v)
		}
		cfg.Accounts[name] = a
	}
	for _, st := range settings {
		if v := getenv(st.env); v != "" {
			if err := st.set(&cfg, v); err != nil {
				return cfg, fmt.Errorf("environment variable %s=%q: %w", st.env, v, err)
			}
		}
	}
	for _, st := range settings {
		if fl := f.fs.Lookup(st.flagName()); fl != nil && fl.Changed {
			if err := st.set(&cfg, fl.Value.String()); err != nil {
				return cfg, fmt.Errorf("--%s=%q: %w", fl.Name, fl.Value.String(), err)
			}
		}
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = filepath.Join(cfg.DataDir, "ordersync.db")
	}
	return cfg, nil
}

// validateServe names the first missing or wrong setting `serve` needs.
func (c *Config) validateServe() error {
	switch {
	case c.APIBaseURL == "":
		return errors.New("missing setting: api_base_url (ORDERSYNC_API_BASE_URL or --api-base-url)")
	case c.SecretKey == "":
		return errors.New("missing setting: secret_key (ORDERSYNC_SECRET_KEY or --secret-key)")
	case len(c.WebhookSecrets) == 0 && !c.InsecureNoWebhookSignature:
		return errors.New("missing setting: webhook_secrets (ORDERSYNC_WEBHOOK_SECRET or --webhook-secret); " +
			"to accept unsigned webhooks anyway, set insecure_no_webhook_signature")
	case c.Workers < 1:
		return fmt.Errorf("bad setting: workers must be ≥ 1, got %d", c.Workers)
	case c.OutboxRetention < 0 || c.EventLogRetention < 0:
		return fmt.Errorf("bad setting: outbox_retention and event_log_retention must not be negative, got %s and %s", c.OutboxRetention, c.EventLogRetention)
	case c.DataDir == "":
		return errors.New("missing setting: data_dir (ORDERSYNC_DATA_DIR or --data-dir)")
	}
	for name, a := range c.Accounts {
		switch {
		case !accountName.MatchString(name) || name == ordersync.DefaultAccount:
			return fmt.Errorf("bad setting: accounts: name %q (want 1-64 of A-Z a-z 0-9 _ -, not %q)", name, ordersync.DefaultAccount)
		case a.APIBaseURL == "":
			return fmt.Errorf("missing setting: accounts.%s.api_base_url (or %sAPI_BASE_URL)", name, accountEnvPrefix(name))
		case a.SecretKey == "":
			return fmt.Errorf("missing setting: accounts.%s.secret_key (or %sSECRET_KEY)", name, accountEnvPrefix(name))
		case len(a.WebhookSecrets) == 0 && !c.InsecureNoWebhookSignature:
			return fmt.Errorf("missing setting: accounts.%s.webhook_secrets (or %sWEBHOOK_SECRET)", name, accountEnvPrefix(name))
		}
	}
	if !accountName.MatchString(c.NATSNamespace) {
		return fmt.Errorf("bad setting: nats_namespace %q (want 1-64 of A-Z a-z 0-9 _ -)", c.NATSNamespace)
	}
	if c.LeaderTTL < 300*time.Millisecond {
		return fmt.Errorf("bad setting: leader_ttl must be ≥ 300ms, got %s", c.LeaderTTL)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("bad setting: tls_cert_file and tls_key_file go together")
	}
	if _, err := parseRoles(c.Role); err != nil {
		return err
	}
	if c.EndpointSecretGrace < 0 {
		return fmt.Errorf("bad setting: endpoint_secret_grace must not be negative, got %s", c.EndpointSecretGrace)
	}
	if _, err := c.endpointParams(); err != nil {
		return err
	}
	if _, err := parseCIDRs(c.TrustedProxies); err != nil {
		return err
	}
	return c.checkAdminListen()
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
