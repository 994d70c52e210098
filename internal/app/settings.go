package app

import (
	"log/slog"
	"strconv"

	"github.com/ordersync/ordersync/internal/redact"
)

// secretSettings are the settings whose values are credentials, by key, in
// the top-level table and an account's or an endpoint's: the start's log
// line shows them as set or not, never their value.
var secretSettings = map[string]bool{
	"secret_key": true, "webhook_secrets": true, "nats_token": true,
	"admin_tokens": true, "admin_viewer_tokens": true, "secret": true,
}

// SettingsAttr is the effective configuration as one log attribute,
// logged once at start: every setting of the table by its key, each
// account's and endpoint's under theirs, credentials redacted (a secret
// shows as xxxxx when set; URLs and DSNs as redact.URL leaves them).
func (c Config) SettingsAttr() slog.Attr {
	attrs := shownSettings(settings, &c)
	if len(c.Accounts) > 0 {
		var accounts []any
		for name, a := range c.Accounts {
			accounts = append(accounts, slog.Group(name, shownSettings(accountSettings, &a)...))
		}
		attrs = append(attrs, slog.Group("accounts", accounts...))
	}
	if len(c.Endpoints) > 0 {
		var endpoints []any
		for i, e := range c.Endpoints {
			endpoints = append(endpoints, slog.Group(strconv.Itoa(i), shownSettings(endpointSettings, &e)...))
		}
		attrs = append(attrs, slog.Group("endpoints", endpoints...))
	}
	return slog.Group("settings", attrs...)
}

func shownSettings[T any](table []setting[T], c *T) []any {
	attrs := make([]any, 0, len(table))
	for _, st := range table {
		if st.replaced {
			continue
		}
		v := st.set.show(c)
		if secretSettings[st.key] {
			if v != "" {
				v = redact.Mask
			}
		} else {
			v = redact.URL(v)
		}
		attrs = append(attrs, slog.String(st.key, v))
	}
	return attrs
}
