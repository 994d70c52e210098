package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
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

	// DataDir holds the embedded JetStream store and the default SQLite file.
	DataDir string `yaml:"data_dir"`
	// DatabaseURL is a SQLite path (default DataDir/ordersync.db) or a
	// postgres:// URL.
	DatabaseURL string `yaml:"database_url"`
	// NATSURL is an external NATS server or cluster; empty runs NATS embedded.
	NATSURL string `yaml:"nats_url"`
	// NATSPort opens a TCP port on the embedded server (0: none, in-process only).
	NATSPort int `yaml:"nats_port"`
	// JetStreamSync is the embedded server's fsync policy: "default" (writes
	// reach the OS at once, fsync every 2 min), "always", or an interval.
	JetStreamSync string `yaml:"jetstream_sync"`

	// Listen is the webhook receiver's address.
	Listen string `yaml:"listen"`
	// AdminListen is the back-office API's address.
	AdminListen string `yaml:"admin_listen"`

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

	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json.
	LogFormat string `yaml:"log_format"`
}

// defaultConfig holds every default, in one place.
func defaultConfig() Config {
	return Config{
		DataDir:           "data",
		JetStreamSync:     "default",
		Listen:            ":8080",
		AdminListen:       "127.0.0.1:9090",
		Workers:           64,
		UpstreamTimeout:   10 * time.Second,
		ReconcileInterval: time.Minute,
		ReconcileBudget:   200,
		LogLevel:          "info",
		LogFormat:         "text",
	}
}

// envSettings maps each environment variable to the setting it overrides.
var envSettings = []struct {
	name string
	set  func(c *Config, v string) error
}{
	{"ORDERSYNC_API_BASE_URL", func(c *Config, v string) error { c.APIBaseURL = v; return nil }},
	{"ORDERSYNC_SECRET_KEY", func(c *Config, v string) error { c.SecretKey = v; return nil }},
	{"ORDERSYNC_WEBHOOK_SECRET", func(c *Config, v string) error { c.WebhookSecrets = splitList(v); return nil }},
	{"ORDERSYNC_INSECURE_NO_WEBHOOK_SIGNATURE", func(c *Config, v string) (err error) {
		c.InsecureNoWebhookSignature, err = strconv.ParseBool(v)
		return err
	}},
	{"ORDERSYNC_DATA_DIR", func(c *Config, v string) error { c.DataDir = v; return nil }},
	{"ORDERSYNC_DATABASE_URL", func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
	{"ORDERSYNC_NATS_URL", func(c *Config, v string) error { c.NATSURL = v; return nil }},
	{"ORDERSYNC_NATS_PORT", func(c *Config, v string) (err error) { c.NATSPort, err = strconv.Atoi(v); return err }},
	{"ORDERSYNC_JETSTREAM_SYNC", func(c *Config, v string) error { c.JetStreamSync = v; return nil }},
	{"ORDERSYNC_LISTEN", func(c *Config, v string) error { c.Listen = v; return nil }},
	{"ORDERSYNC_ADMIN_LISTEN", func(c *Config, v string) error { c.AdminListen = v; return nil }},
	{"ORDERSYNC_WORKERS", func(c *Config, v string) (err error) { c.Workers, err = strconv.Atoi(v); return err }},
	{"ORDERSYNC_UPSTREAM_RPS", func(c *Config, v string) (err error) {
		c.UpstreamRPS, err = strconv.ParseFloat(v, 64)
		return err
	}},
	{"ORDERSYNC_UPSTREAM_TIMEOUT", func(c *Config, v string) (err error) {
		c.UpstreamTimeout, err = time.ParseDuration(v)
		return err
	}},
	{"ORDERSYNC_RECONCILE_INTERVAL", func(c *Config, v string) (err error) {
		c.ReconcileInterval, err = time.ParseDuration(v)
		return err
	}},
	{"ORDERSYNC_RECONCILE_BUDGET", func(c *Config, v string) (err error) {
		c.ReconcileBudget, err = strconv.Atoi(v)
		return err
	}},
	{"ORDERSYNC_LOG_LEVEL", func(c *Config, v string) error { c.LogLevel = v; return nil }},
	{"ORDERSYNC_LOG_FORMAT", func(c *Config, v string) error { c.LogFormat = v; return nil }},
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

// configFlags are the flags every pipeline command takes. They are bound to
// a scratch Config and copied over only when given, so a flag's zero value
// never hides a file or environment setting.
type configFlags struct {
	path string
	set  Config
	fs   *pflag.FlagSet
}

func addConfigFlags(fs *pflag.FlagSet) *configFlags {
	f := &configFlags{fs: fs}
	d := defaultConfig()
	fs.StringVar(&f.path, "config", "", "YAML config file (env ORDERSYNC_CONFIG; see configs/ordersync.example.yaml)")
	fs.StringVar(&f.set.APIBaseURL, "api-base-url", "", "payment link service base URL (ORDERSYNC_API_BASE_URL)")
	fs.StringVar(&f.set.SecretKey, "secret-key", "", "payment link service secret key (ORDERSYNC_SECRET_KEY)")
	fs.StringSliceVar(&f.set.WebhookSecrets, "webhook-secret", nil, "webhook signing secret; repeat or comma-separate for rotation (ORDERSYNC_WEBHOOK_SECRET)")
	fs.BoolVar(&f.set.InsecureNoWebhookSignature, "insecure-no-webhook-signature", false, "accept unsigned webhooks (never in production)")
	fs.StringVar(&f.set.DataDir, "data-dir", "", "directory for the embedded JetStream store and default SQLite file (ORDERSYNC_DATA_DIR, default "+d.DataDir+")")
	fs.StringVar(&f.set.DatabaseURL, "database-url", "", "SQLite path or postgres:// URL (ORDERSYNC_DATABASE_URL, default DATA_DIR/ordersync.db)")
	fs.StringVar(&f.set.NATSURL, "nats-url", "", "external NATS URL; empty runs NATS embedded (ORDERSYNC_NATS_URL)")
	fs.IntVar(&f.set.NATSPort, "nats-port", 0, "TCP port for the embedded NATS server; 0 = in-process only (ORDERSYNC_NATS_PORT)")
	fs.StringVar(&f.set.JetStreamSync, "jetstream-sync", "", "embedded JetStream fsync policy: default, always or an interval like 1s (ORDERSYNC_JETSTREAM_SYNC)")
	fs.StringVar(&f.set.Listen, "listen", "", "webhook receiver address (ORDERSYNC_LISTEN, default "+d.Listen+")")
	fs.StringVar(&f.set.AdminListen, "admin-listen", "", "admin API address (ORDERSYNC_ADMIN_LISTEN, default "+d.AdminListen+")")
	fs.IntVar(&f.set.Workers, "workers", 0, fmt.Sprintf("concurrent upstream fetches (ORDERSYNC_WORKERS, default %d)", d.Workers))
	fs.Float64Var(&f.set.UpstreamRPS, "upstream-rps", 0, "cap on upstream requests per second, 0 = none (ORDERSYNC_UPSTREAM_RPS)")
	fs.DurationVar(&f.set.UpstreamTimeout, "upstream-timeout", 0, "timeout of one upstream request (ORDERSYNC_UPSTREAM_TIMEOUT, default 10s)")
	fs.DurationVar(&f.set.ReconcileInterval, "reconcile-interval", 0, "how often the reconciler runs, 0 disables it (ORDERSYNC_RECONCILE_INTERVAL, default 1m)")
	fs.IntVar(&f.set.ReconcileBudget, "reconcile-budget", 0, "orders one reconciler pass may re-fetch (ORDERSYNC_RECONCILE_BUDGET, default 200)")
	fs.StringVar(&f.set.LogLevel, "log-level", "", "debug, info, warn or error (ORDERSYNC_LOG_LEVEL)")
	fs.StringVar(&f.set.LogFormat, "log-format", "", "text or json (ORDERSYNC_LOG_FORMAT)")
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
	for _, e := range envSettings {
		if v, ok := lookup(getenv, e.name); ok {
			if err := e.set(&cfg, v); err != nil {
				return cfg, fmt.Errorf("environment variable %s=%q: %w", e.name, v, err)
			}
		}
	}
	f.fs.Visit(func(fl *pflag.Flag) { f.apply(&cfg, fl.Name) })
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = filepath.Join(cfg.DataDir, "ordersync.db")
	}
	return cfg, nil
}

func lookup(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

func (f *configFlags) apply(cfg *Config, name string) {
	s := &f.set
	switch name {
	case "api-base-url":
		cfg.APIBaseURL = s.APIBaseURL
	case "secret-key":
		cfg.SecretKey = s.SecretKey
	case "webhook-secret":
		cfg.WebhookSecrets = s.WebhookSecrets
	case "insecure-no-webhook-signature":
		cfg.InsecureNoWebhookSignature = s.InsecureNoWebhookSignature
	case "data-dir":
		cfg.DataDir = s.DataDir
	case "database-url":
		cfg.DatabaseURL = s.DatabaseURL
	case "nats-url":
		cfg.NATSURL = s.NATSURL
	case "nats-port":
		cfg.NATSPort = s.NATSPort
	case "jetstream-sync":
		cfg.JetStreamSync = s.JetStreamSync
	case "listen":
		cfg.Listen = s.Listen
	case "admin-listen":
		cfg.AdminListen = s.AdminListen
	case "workers":
		cfg.Workers = s.Workers
	case "upstream-rps":
		cfg.UpstreamRPS = s.UpstreamRPS
	case "upstream-timeout":
		cfg.UpstreamTimeout = s.UpstreamTimeout
	case "reconcile-interval":
		cfg.ReconcileInterval = s.ReconcileInterval
	case "reconcile-budget":
		cfg.ReconcileBudget = s.ReconcileBudget
	case "log-level":
		cfg.LogLevel = s.LogLevel
	case "log-format":
		cfg.LogFormat = s.LogFormat
	}
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
	case c.DataDir == "":
		return errors.New("missing setting: data_dir (ORDERSYNC_DATA_DIR or --data-dir)")
	}
	if err := c.checkAdminListen(); err != nil {
		return err
	}
	return nil
}

// checkAdminListen refuses an admin address beyond loopback: the admin API
// has no authentication yet.
func (c *Config) checkAdminListen() error {
	host, _, err := net.SplitHostPort(c.AdminListen)
	if err != nil {
		return fmt.Errorf("bad setting: admin_listen %q: %w", c.AdminListen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("bad setting: admin_listen %q is not a loopback address; the admin API has no authentication, so it only listens on 127.0.0.1, ::1 or localhost", c.AdminListen)
	}
	return nil
}
