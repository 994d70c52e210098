package app

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// The file's accounts and endpoints are mappings of settings too: each of
// their settings is declared once here, in a table like settings, and the
// file and the environment read them through the same loops as the
// top-level settings (loadMapping, loadEnv).

// AccountConfig is one further merchant account: its own service, key and
// webhook secrets. AccountEnvPrefix(NAME) and each setting's env override
// the file: ORDERSYNC_ACCOUNT_<NAME>_API_BASE_URL, _SECRET_KEY and
// _WEBHOOK_SECRET (NAME in upper case, '-' as '_').
type AccountConfig struct {
	APIBaseURL     string
	SecretKey      string
	WebhookSecrets []string
}

// The settings of accounts.NAME; env is the variable's suffix after
// AccountEnvPrefix(NAME).
var (
	accountBaseURL = setting[AccountConfig]{key: "api_base_url", env: "API_BASE_URL", usage: "the account's payment link service base URL",
		set: str(func(a *AccountConfig) *string { return &a.APIBaseURL })}
	accountSecretKey = setting[AccountConfig]{key: "secret_key", env: "SECRET_KEY", secret: true, reload: true, usage: "the account's payment link service secret key",
		set: str(func(a *AccountConfig) *string { return &a.SecretKey })}
	accountWebhookSecrets = setting[AccountConfig]{key: "webhook_secrets", env: "WEBHOOK_SECRET", secret: true, reload: true, usage: "the account's webhook signing secrets, several during rotation",
		set: list(func(a *AccountConfig) *[]string { return &a.WebhookSecrets })}

	accountSettings = []setting[AccountConfig]{accountBaseURL, accountSecretKey, accountWebhookSecrets}
)

// EndpointConfig is one HTTP endpoint of the file.
type EndpointConfig struct {
	// ID names the endpoint; default "cfg-" and a hash of the URL. Give
	// one to keep it across URL changes.
	ID  string
	URL string
	// Secret signs deliveries: whsec_ and base64 of 24 to 64 bytes
	// (`openssl rand -base64 32`).
	Secret      string
	Events      []string
	Description string
	// RatePerSecond caps the requests sent to it (0: no cap).
	RatePerSecond float64
}

// The settings of endpoints[i]; the environment sets none of them.
var (
	endpointIDSetting = setting[EndpointConfig]{key: "id", usage: "its name, " + ordersync.NameRule + "; default cfg- and a hash of the URL",
		set: str(func(e *EndpointConfig) *string { return &e.ID })}
	endpointURL = setting[EndpointConfig]{key: "url", usage: "where deliveries are posted",
		set: str(func(e *EndpointConfig) *string { return &e.URL })}
	endpointSecretSetting = setting[EndpointConfig]{key: "secret", secret: true, usage: "signs deliveries: whsec_ and base64 of 24-64 bytes",
		set: str(func(e *EndpointConfig) *string { return &e.Secret })}
	endpointEvents = setting[EndpointConfig]{key: "events", usage: "the events it receives: order.paid, order.status_changed",
		set: list(func(e *EndpointConfig) *[]string { return &e.Events })}
	endpointDescription = setting[EndpointConfig]{key: "description", usage: "what it is, for the operators",
		set: str(func(e *EndpointConfig) *string { return &e.Description })}
	endpointRate = setting[EndpointConfig]{key: "rate_per_second", usage: "cap on requests per second, 0: none",
		set: number(func(e *EndpointConfig) *float64 { return &e.RatePerSecond })}

	endpointSettings = []setting[EndpointConfig]{endpointIDSetting, endpointURL, endpointSecretSetting, endpointEvents, endpointDescription, endpointRate}
)

// AccountSettingNames says where each of an account's settings is set, in
// the words of a message.
type AccountSettingNames struct {
	APIBaseURL, SecretKey, WebhookSecrets string
}

// AccountSettings names, from the tables of settings, where account's
// settings are set: for the default account the top-level setting with its
// variable and flag, as "secret_key (ORDERSYNC_SECRET_KEY or
// --secret-key)"; for another, as "accounts.NAME.secret_key
// (ORDERSYNC_ACCOUNT_NAME_SECRET_KEY)".
func AccountSettings(account string) AccountSettingNames {
	return AccountSettingNames{
		APIBaseURL:     accountSettingName(account, accountBaseURL),
		SecretKey:      accountSettingName(account, accountSecretKey),
		WebhookSecrets: accountSettingName(account, accountWebhookSecrets),
	}
}

func accountSettingName(account string, st setting[AccountConfig]) string {
	if account == ordersync.DefaultAccount {
		top, ok := settingByKey(settings, st.key)
		if !ok {
			panic("internal/app: account setting " + st.key + " has no top-level setting for the default account")
		}
		return fmt.Sprintf("%s (%s or --%s)", top.key, top.env, top.flagName())
	}
	return fmt.Sprintf("accounts.%s.%s (%s%s)", account, st.key, AccountEnvPrefix(account), st.env)
}

// AccountEnvPrefix is the environment prefix of an account's settings.
func AccountEnvPrefix(name string) string {
	return "ORDERSYNC_ACCOUNT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_"
}

// Upstreams returns every account's service settings, the default's first.
func (c *Config) Upstreams() map[string]AccountConfig {
	out := map[string]AccountConfig{ordersync.DefaultAccount: {APIBaseURL: c.APIBaseURL, SecretKey: c.SecretKey, WebhookSecrets: c.WebhookSecrets}}
	for name, a := range c.Accounts {
		out[name] = a
	}
	return out
}

// StoreNames are the accounts this deployment serves, the default first,
// then the others by name: the stores of the back office.
func (c *Config) StoreNames() []string {
	return append([]string{ordersync.DefaultAccount}, slices.Sorted(maps.Keys(c.Accounts))...)
}

// loadAccountsEnv lets the environment override each account of the file.
func loadAccountsEnv(cfg *Config, getenv func(string) string) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg.Accounts)) {
		a := cfg.Accounts[name]
		errs = append(errs, loadEnv(&a, accountSettings, AccountEnvPrefix(name), getenv)...)
		cfg.Accounts[name] = a
	}
	return errs
}

// loadAccounts reads the accounts mapping: name → its settings.
func loadAccounts(cfg *Config, n *yaml.Node, at at) []error {
	if n.Kind != yaml.MappingNode {
		return []error{at(n, "accounts", errors.New("want a mapping of account names to their settings"))}
	}
	var errs []error
	cfg.Accounts = map[string]AccountConfig{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, body := n.Content[i].Value, n.Content[i+1]
		prefix := "accounts." + name
		if body.Kind != yaml.MappingNode {
			errs = append(errs, at(body, prefix, errors.New(describe(accountSettings))))
			continue
		}
		var a AccountConfig
		errs = append(errs, loadMapping(&a, accountSettings, body, prefix+".", notIn("an account", accountSettings, prefix+".", at), at)...)
		cfg.Accounts[name] = a
	}
	return errs
}

// loadEndpoints reads the endpoints list: each a mapping of its settings.
func loadEndpoints(cfg *Config, n *yaml.Node, at at) []error {
	if n.Kind != yaml.SequenceNode {
		return []error{at(n, "endpoints", fmt.Errorf("want a list of endpoints, each a mapping of its settings (%s)", keysOf(endpointSettings)))}
	}
	var errs []error
	cfg.Endpoints = nil
	for i, item := range n.Content {
		prefix := fmt.Sprintf("endpoints[%d]", i)
		if item.Kind != yaml.MappingNode {
			errs = append(errs, at(item, prefix, errors.New(describe(endpointSettings))))
			continue
		}
		var e EndpointConfig
		errs = append(errs, loadMapping(&e, endpointSettings, item, prefix+".", notIn("an endpoint", endpointSettings, prefix+".", at), at)...)
		cfg.Endpoints = append(cfg.Endpoints, e)
	}
	return errs
}

// checkAccounts names every missing or wrong setting of the accounts.
func (c *Config) checkAccounts() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Accounts)) {
		a := c.Accounts[name]
		bad := func(st setting[AccountConfig], err error) {
			errs = append(errs, fmt.Errorf("bad setting: accounts.%s.%s: %w", name, st.key, err))
		}
		missing := func(st setting[AccountConfig]) {
			errs = append(errs, fmt.Errorf("missing setting: %s", accountSettingName(name, st)))
		}
		if !ordersync.ValidName(name) || name == ordersync.DefaultAccount {
			errs = append(errs, fmt.Errorf("bad setting: accounts: name %q (want %s, not %q)", name, ordersync.NameRule, ordersync.DefaultAccount))
		}
		if a.APIBaseURL == "" {
			missing(accountBaseURL)
		} else if err := CheckBaseURL(a.APIBaseURL); err != nil {
			bad(accountBaseURL, err)
		}
		if a.SecretKey == "" {
			missing(accountSecretKey)
		}
		if len(a.WebhookSecrets) == 0 && !c.InsecureNoWebhookSignature {
			missing(accountWebhookSecrets)
		}
	}
	return errs
}

// EndpointParams validates the file's endpoints and returns them as the
// store takes them.
func (c *Config) EndpointParams() ([]ordersync.EndpointParams, error) {
	out := make([]ordersync.EndpointParams, 0, len(c.Endpoints))
	seen := map[string]bool{}
	for i, e := range c.Endpoints {
		bad := func(st setting[EndpointConfig], format string, args ...any) error {
			return fmt.Errorf("bad setting: endpoints[%d].%s"+format, append([]any{i, st.key}, args...)...)
		}
		p := ordersync.EndpointParams{ID: e.ID, URL: e.URL, Description: e.Description, Secret: e.Secret, RatePerSecond: e.RatePerSecond}
		if e.RatePerSecond < 0 {
			return nil, bad(endpointRate, " must not be negative, got %v", e.RatePerSecond)
		}
		if p.ID == "" {
			sum := sha256.Sum256([]byte(e.URL))
			p.ID = "cfg-" + hex.EncodeToString(sum[:6])
		}
		for _, ev := range e.Events {
			p.Events = append(p.Events, ordersync.HookEvent(ev))
		}
		if !ordersync.ValidName(p.ID) {
			return nil, bad(endpointIDSetting, " %q (want %s)", p.ID, ordersync.NameRule)
		}
		if seen[p.ID] {
			return nil, fmt.Errorf("bad setting: endpoints[%d]: id %q twice (give each URL once, or distinct ids)", i, p.ID)
		}
		seen[p.ID] = true
		if err := ordersync.ValidateEndpointURL(p.URL); err != nil {
			return nil, bad(endpointURL, ": %w", err)
		}
		if err := ordersync.ValidateHookEvents(p.Events); err != nil {
			return nil, bad(endpointEvents, ": %w", err)
		}
		if err := delivery.ValidateSecret(p.Secret); err != nil {
			return nil, bad(endpointSecretSetting, ": %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}
