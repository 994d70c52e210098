package app

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/worker"
)

func loadTestConfig(t *testing.T, file string, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags := AddConfigFlags(fs, ScopeAll)
	if file != "" {
		path := filepath.Join(t.TempDir(), "ordersync.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return flags.Load(func(k string) string { return env[k] })
}

// TestConfigPrecedence: file, then environment, then flags.
func TestConfigPrecedence(t *testing.T) {
	file := "api_base_url: https://file.example\nsecret_key: from-file\nworkers: 8\nreconcile_rps: 7.5\nwebhook_secrets: [a, b]\n"
	env := map[string]string{"ORDERSYNC_SECRET_KEY": "from-env", "ORDERSYNC_WORKERS": "16", "ORDERSYNC_DATA_DIR": "/var/lib/os"}
	cfg, err := loadTestConfig(t, file, env, "--workers", "32")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIBaseURL != "https://file.example" || cfg.SecretKey != "from-env" || cfg.Workers != 32 {
		t.Fatalf("precedence broken: %+v", cfg)
	}
	if cfg.ReconcileRPS != 7.5 || strings.Join(cfg.WebhookSecrets, ",") != "a,b" {
		t.Fatalf("file settings lost: %+v", cfg)
	}
	if cfg.DatabaseURL != filepath.Join("/var/lib/os", "ordersync.db") {
		t.Fatalf("database URL should default into the data dir, got %q", cfg.DatabaseURL)
	}
	if cfg.Listen != ":8080" || cfg.AdminListen != "127.0.0.1:9090" {
		t.Fatalf("defaults lost: %+v", cfg)
	}
}

// TestConfigErrors: each missing or bad setting is named.
func TestConfigErrors(t *testing.T) {
	full := map[string]string{"ORDERSYNC_API_BASE_URL": "http://x", "ORDERSYNC_SECRET_KEY": "k", "ORDERSYNC_WEBHOOK_SECRET": "s"}
	without := func(k string) map[string]string {
		m := map[string]string{}
		for kk, v := range full {
			if kk != k {
				m[kk] = v
			}
		}
		return m
	}
	tests := []struct {
		name string
		file string
		env  map[string]string
		args []string
		want string
	}{
		{"no base url", "", without("ORDERSYNC_API_BASE_URL"), nil, "api_base_url"},
		{"no secret key", "", without("ORDERSYNC_SECRET_KEY"), nil, "secret_key"},
		{"no webhook secret", "", without("ORDERSYNC_WEBHOOK_SECRET"), nil, "webhook_secrets"},
		{"admin beyond loopback", "", full, []string{"--admin-listen", "0.0.0.0:9090"}, "admin_listen"},
		{"workers", "", full, []string{"--workers", "-1"}, "workers"},
		{"negative retention", "", full, []string{"--event-log-retention", "-1h"}, "event_log_retention"},
		{"bad env number", "", map[string]string{"ORDERSYNC_WORKERS": "many"}, nil, "ORDERSYNC_WORKERS"},
		{"unknown file key", "api_base_urll: x\n", nil, nil, "api_base_urll"},
		{"bad role", "", full, []string{"--role", "worker,janitor"}, "janitor"},
		{"half a TLS pair", "", full, []string{"--tls-cert-file", "/x.pem"}, "tls_key_file"},
		{"bad proxy", "", full, []string{"--trusted-proxies", "10.0.0.0/99"}, "trusted_proxies"},
		{"ack wait below the in-progress reports", "", full, []string{"--ack-wait", "10s"}, "ack_wait"},
		{"no rejection flush", "", full, []string{"--rejection-flush-interval", "0s"}, "rejection_flush_interval"},
		{"no delivery slot", "", full, []string{"--delivery-concurrency", "0"}, "delivery_concurrency"},
		{"no delivery time", "", full, []string{"--delivery-timeout", "0s"}, "delivery_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTestConfig(t, tc.file, tc.env, tc.args...)
			if err == nil {
				err = cfg.ValidateServe()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
	// An admin token allows listening beyond loopback.
	cfg, err := loadTestConfig(t, "", full, "--admin-listen", "0.0.0.0:9090", "--admin-tokens", "t1,t2")
	if err != nil || cfg.ValidateServe() != nil || len(cfg.AdminTokens) != 2 {
		t.Fatalf("admin with tokens: %v %v", err, cfg.AdminTokens)
	}
	// Insecure mode stands in for the webhook secret, on purpose only.
	cfg, err = loadTestConfig(t, "", without("ORDERSYNC_WEBHOOK_SECRET"), "--insecure-no-webhook-signature")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateServe(); err != nil {
		t.Fatalf("insecure mode should start: %v", err)
	}
}

// TestReplacedReconcileSettings: the settings of the reconciler's former
// passes are refused with what replaces them, from the file, the
// environment and flags alike, except reconcile_interval 0, which still
// turns the reconciler off; reconcile_rps is the budget, 0 turns it off.
func TestReplacedReconcileSettings(t *testing.T) {
	full := map[string]string{"ORDERSYNC_API_BASE_URL": "http://x", "ORDERSYNC_SECRET_KEY": "k", "ORDERSYNC_WEBHOOK_SECRET": "s"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for kk, vv := range full {
			m[kk] = vv
		}
		return m
	}
	refused := []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []string
	}{
		{"interval in the file", "reconcile_interval: 1m\n", full, nil, []string{"reconcile_interval 1m0s", "reconcile_rps", "ORDERSYNC_RECONCILE_RPS", "remove reconcile_interval"}},
		{"interval flag", "", full, []string{"--reconcile-interval", "2s"}, []string{"reconcile_interval 2s", "reconcile_rps"}},
		{"budget in the environment", "", with("ORDERSYNC_RECONCILE_BUDGET", "200"), nil, []string{"reconcile_budget 200", "3.33 requests per second", "reconcile_rps", "remove reconcile_budget"}},
		{"budget and interval", "reconcile_interval: 10s\nreconcile_budget: 50\n", full, nil, []string{"5.00 requests per second with passes every 10s", "remove reconcile_budget and reconcile_interval"}},
		{"negative rps", "", full, []string{"--reconcile-rps", "-1"}, []string{"reconcile_rps"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTestConfig(t, tc.file, tc.env, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.ValidateServe()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	on := []struct {
		name string
		file string
		args []string
		on   bool
		rps  float64
	}{
		{"default", "", nil, true, worker.DefaultReconcileBudget},
		{"rps", "reconcile_rps: 5\n", nil, true, 5},
		{"rps 0", "", []string{"--reconcile-rps", "0"}, false, 0},
		{"interval 0 still turns it off", "reconcile_interval: 0s\n", nil, false, worker.DefaultReconcileBudget},
	}
	for _, tc := range on {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTestConfig(t, tc.file, full, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.ValidateServe(); err != nil {
				t.Fatal(err)
			}
			if cfg.reconcileOn() != tc.on || cfg.ReconcileRPS != tc.rps {
				t.Errorf("reconciler on %v at %v requests/s, want %v at %v", cfg.reconcileOn(), cfg.ReconcileRPS, tc.on, tc.rps)
			}
		})
	}
}

// TestUpstreamBudgetDefaults: with no setting, the webhook-driven fetches
// have no fixed cap (the rate is learned from the upstream's 429s), while
// the reconciler's budget stays below the 10 a second assumed allowed a
// merchant; a fixed cap can still be set.
func TestUpstreamBudgetDefaults(t *testing.T) {
	cfg, err := loadTestConfig(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UpstreamRPS != 0 || worker.DefaultUpstreamRPS != 0 {
		t.Errorf("upstream_rps %v by default, want 0 (no fixed cap)", cfg.UpstreamRPS)
	}
	if !(cfg.ReconcileRPS > 0 && cfg.ReconcileRPS < 10) {
		t.Errorf("reconcile_rps %v by default, want below the assumed 10 a second", cfg.ReconcileRPS)
	}
	capped, err := loadTestConfig(t, "", map[string]string{"ORDERSYNC_UPSTREAM_RPS": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if capped.UpstreamRPS != 8 {
		t.Errorf("ORDERSYNC_UPSTREAM_RPS=8 gave upstream_rps %v, want 8", capped.UpstreamRPS)
	}
}

// TestQueueAndReceiverTimings: ack_wait reaches the worker consumer's
// configuration, and both it and rejection_flush_interval keep their
// defaults (30 s, 10 s) unless set.
func TestQueueAndReceiverTimings(t *testing.T) {
	cfg, err := loadTestConfig(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.QueueConfig().AckWait; got != 30*time.Second {
		t.Errorf("the consumer's ack wait %s by default, want 30s", got)
	}
	if cfg.RejectionFlushInterval != 10*time.Second {
		t.Errorf("rejection_flush_interval %s by default, want 10s", cfg.RejectionFlushInterval)
	}
	set, err := loadTestConfig(t, "ack_wait: 45s\n", map[string]string{"ORDERSYNC_REJECTION_FLUSH_INTERVAL": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.QueueConfig().AckWait; got != 45*time.Second {
		t.Errorf("ack_wait: 45s gave the consumer an ack wait of %s", got)
	}
	if set.RejectionFlushInterval != 2*time.Second {
		t.Errorf("ORDERSYNC_REJECTION_FLUSH_INTERVAL=2s gave %s", set.RejectionFlushInterval)
	}
}

// TestDeliverySettings: the dispatcher gets its concurrency and attempt
// timeout from the settings, 8 and 10s by default.
func TestDeliverySettings(t *testing.T) {
	cfg, err := loadTestConfig(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.DispatchConfig(); got.Concurrency != 8 || got.Timeout != 10*time.Second {
		t.Errorf("by default the dispatcher gets concurrency %d and timeout %s, want 8 and 10s", got.Concurrency, got.Timeout)
	}
	set, err := loadTestConfig(t, "delivery_concurrency: 32\n", map[string]string{"ORDERSYNC_DELIVERY_TIMEOUT": "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.DispatchConfig(); got.Concurrency != 32 || got.Timeout != 3*time.Second {
		t.Errorf("delivery_concurrency: 32 and ORDERSYNC_DELIVERY_TIMEOUT=3s gave %d and %s", got.Concurrency, got.Timeout)
	}
}

// TestExampleConfig: the example file loads and documents every setting
// with its environment variable, and so does docs/configuration.md.
func TestExampleConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", "ordersync.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadTestConfig(t, string(b), nil); err != nil {
		t.Fatalf("the example config does not load: %v", err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range settings {
		if !strings.Contains(string(doc), st.env) {
			t.Errorf("docs/configuration.md's table lacks %s", st.env)
		}
		if st.replaced {
			continue
		}
		if !strings.Contains(string(b), "\n"+st.key+":") {
			t.Errorf("the example config lacks %s", st.key)
		}
		if !strings.Contains(string(b), st.env) {
			t.Errorf("the example config does not name %s", st.env)
		}
	}
}

// TestConfigErrorsInUserTerms: a bad value is named by where it was set —
// the file's key and line, the variable, the flag — in words, never a Go
// type or parser, and every problem is reported at once.
func TestConfigErrorsInUserTerms(t *testing.T) {
	file := "api_base_url: https://api.example\n" + // line 1
		"workers: many\n" + // line 2
		"upstream_timeout: 5\n" + // line 3
		"migrate_on_start: maybe\n" + // line 4
		"webhook_secrets: {a: b}\n" + // line 5
		"reconcile_intervall: 1m\n" + // line 6
		"accounts:\n" + // line 7
		"  shop:\n" + // line 8
		"    secret_key: k\n" + // line 9
		"    colour: red\n" // line 10
	_, err := loadTestConfig(t, file, map[string]string{"ORDERSYNC_UPSTREAM_RPS": "lots"}, "--leader-ttl", "soon")
	if err == nil {
		t.Fatal("a file of bad values loaded")
	}
	msg := err.Error()
	for _, want := range []string{
		"8 problems in the configuration:",
		`line 2: workers: "many" is not a whole number`,
		`line 3: upstream_timeout: "5" is not a duration (write it like 90s, 5m or 24h)`,
		`line 4: migrate_on_start: "maybe" is not true or false`,
		"line 5: webhook_secrets: want a value or a list of values",
		"line 6: reconcile_intervall: not a setting",
		"line 10: accounts.shop.colour: not an account setting",
		`environment variable ORDERSYNC_UPSTREAM_RPS: "lots" is not a number`,
		`--leader-ttl: "soon" is not a duration`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	for _, leak := range []string{"main.Config", "!!", "strconv", "time.Duration", "yaml:"} {
		if strings.Contains(msg, leak) {
			t.Errorf("the error shows %q, a detail of the code:\n%s", leak, msg)
		}
	}

	_, err = loadTestConfig(t, "workers: [\n", nil)
	if err == nil || !strings.Contains(err.Error(), "is not valid YAML") || !strings.Contains(err.Error(), "line ") {
		t.Errorf("broken YAML: %v, want it named with its line", err)
	}

	cfg, err := loadTestConfig(t, "", map[string]string{"ORDERSYNC_API_BASE_URL": "api.example.com", "ORDERSYNC_WEBHOOK_SECRET": "s"})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.ValidateServe()
	for _, want := range []string{
		`bad setting: api_base_url: "api.example.com" is not an http or https URL (like https://api.example.com)`,
		"missing setting: secret_key",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %q", err, want)
		}
	}
}

// TestConfigEndpoints: the file's endpoints load, get an id from their URL
// unless they name one, and each wrong field is named.
func TestConfigEndpoints(t *testing.T) {
	full := map[string]string{"ORDERSYNC_API_BASE_URL": "http://x", "ORDERSYNC_SECRET_KEY": "k", "ORDERSYNC_WEBHOOK_SECRET": "s"}
	file := `endpoints:
  - id: erp
    url: https://erp.example.com/hook
    secret: ` + endpointSecret + `
    events: [order.paid, order.status_changed]
    description: ERP
  - url: https://wms.example.com/hook
    secret: ` + endpointSecret + `
    events: [order.paid]
`
	cfg, err := loadTestConfig(t, file, full)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateServe(); err != nil {
		t.Fatalf("validateServe: %v", err)
	}
	params, err := cfg.EndpointParams()
	if err != nil || len(params) != 2 {
		t.Fatalf("endpointParams = %v, %v", params, err)
	}
	if params[0].ID != "erp" || len(params[0].Events) != 2 || params[0].Description != "ERP" {
		t.Errorf("first endpoint %+v", params[0])
	}
	if !strings.HasPrefix(params[1].ID, "cfg-") || len(params[1].ID) != len("cfg-")+12 {
		t.Errorf("derived id %q", params[1].ID)
	}
	for _, tc := range []struct{ name, entry, want string }{
		{"bad url", "url: not-a-url\n    secret: " + endpointSecret + "\n    events: [order.paid]", "endpoints[0].url"},
		{"no events", "url: https://x.example\n    secret: " + endpointSecret, "endpoints[0].events"},
		{"unknown event", "url: https://x.example\n    secret: " + endpointSecret + "\n    events: [order.created]", "endpoints[0].events"},
		{"bad secret", "url: https://x.example\n    secret: hunter2\n    events: [order.paid]", "endpoints[0].secret"},
		{"bad id", "id: a.b\n    url: https://x.example\n    secret: " + endpointSecret + "\n    events: [order.paid]", "endpoints[0].id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTestConfig(t, "endpoints:\n  - "+tc.entry+"\n", full)
			if err == nil {
				err = cfg.ValidateServe()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
}

// endpointSecret is a well-formed signing secret (whsec_ and base64).
const endpointSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestAccountAndEndpointSettingsInTable: every field of an account or an
// endpoint is set by exactly one setting of its table, the file and the
// environment reach each through it, the example config and docs/configuration.md
// name every one, and a key the table lacks is an error naming it.
func TestAccountAndEndpointSettingsInTable(t *testing.T) {
	fieldsOf(t, accountSettings)
	fieldsOf(t, endpointSettings)

	// The file and the environment, through the tables alone.
	var file strings.Builder
	file.WriteString("accounts:\n  shop-2:\n")
	for _, st := range accountSettings {
		fmt.Fprintf(&file, "    %s: %s\n", st.key, inYAML(st.set.kind, sampleOf(st.set.kind, "file")))
	}
	file.WriteString("endpoints:\n  -\n")
	for _, st := range endpointSettings {
		fmt.Fprintf(&file, "    %s: %s\n", st.key, inYAML(st.set.kind, sampleOf(st.set.kind, "file")))
	}
	env := map[string]string{}
	for _, st := range accountSettings[1:] { // the first keeps the file's value
		env[AccountEnvPrefix("shop-2")+st.env] = sampleOf(st.set.kind, "env")
	}
	cfg, err := loadTestConfig(t, file.String(), env)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Accounts["shop-2"]
	for i, st := range accountSettings {
		want := sampleOf(st.set.kind, "file")
		if i > 0 {
			want = sampleOf(st.set.kind, "env")
		}
		if got := st.set.show(&a); got != want {
			t.Errorf("accounts.shop-2.%s = %q, want %q", st.key, got, want)
		}
	}
	if len(cfg.Endpoints) != 1 {
		t.Fatalf("endpoints = %+v", cfg.Endpoints)
	}
	for _, st := range endpointSettings {
		if got, want := st.set.show(&cfg.Endpoints[0]), sampleOf(st.set.kind, "file"); got != want {
			t.Errorf("endpoints[0].%s = %q, want %q", st.key, got, want)
		}
	}

	// A key the table lacks is named, with the keys it has; an entry that
	// is no mapping is told what each of them is.
	_, err = loadTestConfig(t, "accounts:\n  shop:\n    secret_key: k\n    colour: red\n  shop-3: https://x.example\n"+
		"endpoints:\n  - url: https://x.example\n    colour: blue\n  - https://y.example\n", nil)
	for _, want := range []string{
		"line 4: accounts.shop.colour: not an account setting (want " + keysOf(accountSettings) + ")",
		"line 5: accounts.shop-3: want a mapping of its settings: api_base_url (the account's payment link service base URL), secret_key (",
		"line 8: endpoints[0].colour: not an endpoint setting (want " + keysOf(endpointSettings) + ")",
		"line 9: endpoints[1]: want a mapping of its settings: id (its name, " + ordersync.NameRule,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unknown keys: %v, want %q", err, want)
		}
	}

	// The example config's accounts and endpoints, uncommented, load and
	// use every key of the tables; docs/configuration.md's table names each.
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", "ordersync.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = loadTestConfig(t, uncommentExamples(string(b)), nil)
	if err != nil {
		t.Fatalf("the example config's accounts and endpoints do not load: %v", err)
	}
	if err := cfg.ValidateServe(); err != nil {
		t.Fatalf("the example config's accounts and endpoints: %v", err)
	}
	if len(cfg.Accounts) != 1 || len(cfg.Endpoints) != 1 {
		t.Fatalf("the example config gives accounts %v and endpoints %v, want one of each", cfg.Accounts, cfg.Endpoints)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range accountSettings {
		if !strings.Contains(uncommentExamples(string(b)), "\n    "+st.key+":") {
			t.Errorf("the example config's account lacks %s", st.key)
		}
		for _, want := range []string{"accounts.NAME." + st.key, AccountEnvPrefix("NAME") + st.env} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("docs/configuration.md's table lacks %s", want)
			}
		}
		if !strings.Contains(string(b), "_"+st.env) {
			t.Errorf("the example config does not name _%s", st.env)
		}
	}
	for _, st := range endpointSettings {
		if !strings.Contains(uncommentExamples(string(b)), "\n    "+st.key+":") && !strings.Contains(uncommentExamples(string(b)), "\n  - "+st.key+":") {
			t.Errorf("the example config's endpoint lacks %s", st.key)
		}
	}
	if !strings.Contains(string(doc), "| endpoints (a list of HTTP endpoints, each with "+keysOf(endpointSettings)+";") {
		t.Errorf("docs/configuration.md's table does not list the endpoint settings %s", keysOf(endpointSettings))
	}
}

// fieldsOf fails unless each setting of table sets one field of T and each
// field of T is set by one setting.
func fieldsOf[T any](t *testing.T, table []setting[T]) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	setBy := make([][]string, typ.NumField())
	for _, st := range table {
		var v T
		if err := st.set.parse(&v, sampleOf(st.set.kind, "x")); err != nil {
			t.Fatalf("%s: %v", st.key, err)
		}
		n := 0
		for i := range typ.NumField() {
			if !reflect.ValueOf(v).Field(i).IsZero() {
				setBy[i] = append(setBy[i], st.key)
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s sets %d fields of %s, want 1", st.key, n, typ)
		}
	}
	for i, keys := range setBy {
		if len(keys) != 1 {
			t.Errorf("%s.%s is set by %v, want one setting of the table", typ, typ.Field(i).Name, keys)
		}
	}
}

// sampleOf is a setting's text of a kind, distinct for each tag.
func sampleOf(kind, tag string) string {
	switch kind {
	case "strings":
		return tag + "-1,https://" + tag + ".example"
	case "float":
		return strconv.Itoa(len(tag)) + ".5"
	}
	return "https://" + tag + ".example/x"
}

// inYAML is a setting's text as the file writes it.
func inYAML(kind, text string) string {
	if kind == "strings" {
		return "[" + text + "]"
	}
	return text
}

// uncommentExamples is the example config with the commented entries under
// accounts: {} and endpoints: [] in force.
func uncommentExamples(example string) string {
	var out []string
	in := false
	for _, line := range strings.Split(example, "\n") {
		switch {
		case line == "accounts: {}" || line == "endpoints: []":
			line, in = strings.Fields(line)[0], true
		case in && strings.HasPrefix(line, "#  "):
			line = line[1:]
		default:
			in = false
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestAccountSettings: where an account's settings are set comes from the
// tables, for the default account (the top-level settings) and another.
func TestAccountSettings(t *testing.T) {
	if got, want := AccountSettings(ordersync.DefaultAccount), (AccountSettingNames{
		APIBaseURL:     "api_base_url (ORDERSYNC_API_BASE_URL or --api-base-url)",
		SecretKey:      "secret_key (ORDERSYNC_SECRET_KEY or --secret-key)",
		WebhookSecrets: "webhook_secrets (ORDERSYNC_WEBHOOK_SECRET or --webhook-secret)",
	}); got != want {
		t.Errorf("default account: %+v, want %+v", got, want)
	}
	if got, want := AccountSettings("shop-2"), (AccountSettingNames{
		APIBaseURL:     "accounts.shop-2.api_base_url (ORDERSYNC_ACCOUNT_SHOP_2_API_BASE_URL)",
		SecretKey:      "accounts.shop-2.secret_key (ORDERSYNC_ACCOUNT_SHOP_2_SECRET_KEY)",
		WebhookSecrets: "accounts.shop-2.webhook_secrets (ORDERSYNC_ACCOUNT_SHOP_2_WEBHOOK_SECRET)",
	}); got != want {
		t.Errorf("another account: %+v, want %+v", got, want)
	}
	// The messages of a missing account setting use them.
	cfg, err := loadTestConfig(t, "api_base_url: https://a.example\nsecret_key: k\nwebhook_secrets: [s]\ndata_dir: /tmp/x\naccounts:\n  shop-2:\n    api_base_url: https://b.example\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.ValidateServe()
	for _, want := range []string{"missing setting: " + AccountSettings("shop-2").SecretKey, "missing setting: " + AccountSettings("shop-2").WebhookSecrets} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateServe: %v, want %q", err, want)
		}
	}
	if _, err := upstreamOf(cfg, "shop-2"); err == nil || err.Error() != "missing setting: "+AccountSettings("shop-2").SecretKey {
		t.Errorf("upstreamOf: %v", err)
	}
}

// TestLowerOpenConnsAlone: lowering db_max_open_conns alone opens the
// mirror (the idle connections kept follow it); an idle setting above the
// open one is still refused.
func TestLowerOpenConnsAlone(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr bool
	}{
		{[]string{"--db-max-open-conns", "4"}, false},
		{[]string{"--db-max-open-conns", "4", "--db-max-idle-conns", "8"}, true},
	} {
		args := append([]string{"--database-url", filepath.Join(t.TempDir(), "m.db")}, tc.args...)
		cfg, err := loadTestConfig(t, "", nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		w := &wiring{cfg: cfg, logger: slog.New(slog.DiscardHandler)}
		err = w.openMirror(t.Context(), true)
		if err == nil {
			w.db.Close()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%v: open the mirror: %v, want an error %v", tc.args, err, tc.wantErr)
		}
	}
}
