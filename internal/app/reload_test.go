package app

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestReload: a reload applies the secret key, the file's endpoints (a
// replaced secret keeps signing for the grace), an account's secrets and
// the log level in place; reports an added account and a changed listen
// address as needing a restart without applying them; and refuses an
// invalid configuration whole, changing nothing.
func TestReload(t *testing.T) {
	st := startTestStack(t, StackOptions{})
	p := st.Program
	ctx := context.Background()
	level := new(slog.LevelVar)
	p.SetLogLevelVar(level)
	fetchKind := func() ordersync.UpstreamErrorKind {
		t.Helper()
		_, err := p.clients[ordersync.DefaultAccount].GetOrder(ctx, "absent")
		var ue *ordersync.UpstreamError
		if !errors.As(err, &ue) {
			t.Fatalf("GetOrder of an absent order: %v", err)
		}
		return ue.Kind
	}
	if k := fetchKind(); k != ordersync.UpstreamNotFound {
		t.Fatalf("with the simulator's key: %v", k)
	}
	lastSuccessful := func() float64 { return gaugeValue(t, p.Registry(), "ordersync_config_last_reload_successful") }
	if v := lastSuccessful(); v != 1 {
		t.Errorf("at start, ordersync_config_last_reload_successful = %v, want 1", v)
	}

	const secret1, secret2 = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_QmFzZTY0IG9mIDI0IHJhbmRvbSBieXRlcyE="
	next := p.Config()
	next.SecretKey = "sk-rotated"
	next.LogLevel = "debug"
	next.Endpoints = []EndpointConfig{{ID: "erp", URL: "https://erp.example/hook", Secret: secret1, Events: []string{string(ordersync.HookOrderPaid)}}}
	next.Accounts = map[string]AccountConfig{"shop-2": {APIBaseURL: "https://api.example", SecretKey: "k", WebhookSecrets: []string{"w"}}}
	next.Listen = "127.0.0.1:1"
	r, err := p.Reload(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"secret_key", "log_level", "endpoints"}; !slices.Equal(r.Applied, want) {
		t.Errorf("applied %q, want %q", r.Applied, want)
	}
	if want := []string{"listen", "accounts.shop-2"}; !slices.Equal(r.NeedRestart, want) {
		t.Errorf("needs a restart %q, want %q", r.NeedRestart, want)
	}
	if k := fetchKind(); k != ordersync.UpstreamUnauthorized {
		t.Errorf("after the secret key changed, the simulator answered %v, want it to refuse the key", k)
	}
	if level.Level() != slog.LevelDebug {
		t.Errorf("log level %v, want debug", level.Level())
	}
	ep, err := p.DB().FindEndpoint(ctx, "erp")
	if err != nil || ep.Secret != secret1 {
		t.Fatalf("the file's endpoint after the reload: %+v, %v", ep, err)
	}

	// The endpoint's secret rotates; the old one keeps signing.
	next.Endpoints[0].Secret = secret2
	if r, err = p.Reload(ctx, next); err != nil || !slices.Equal(r.Applied, []string{"endpoints"}) {
		t.Fatalf("rotate the endpoint secret: %+v, %v", r, err)
	}
	if ep, err = p.DB().FindEndpoint(ctx, "erp"); err != nil || ep.Secret != secret2 || ep.PreviousSecret != secret1 || ep.PreviousSecretUntil == nil {
		t.Errorf("the endpoint after its secret rotated: %+v, %v", ep, err)
	}

	// Invalid: nothing changes, not even the valid parts.
	bad := next
	bad.SecretKey = st.SecretKey
	bad.Workers = 0
	if _, err := p.Reload(ctx, bad); err == nil || !strings.Contains(err.Error(), "workers") {
		t.Errorf("an invalid configuration: %v, want it refused naming workers", err)
	}
	if k := fetchKind(); k != ordersync.UpstreamUnauthorized {
		t.Errorf("after a refused reload, the key changed: %v", k)
	}
	bad = next
	bad.SecretKey = "a\nb"
	if _, err := p.Reload(ctx, bad); err == nil || !strings.Contains(err.Error(), "secret_key") {
		t.Errorf("a secret key with a line break: %v, want it refused naming secret_key", err)
	}
	if v := lastSuccessful(); v != 0 {
		t.Errorf("after a refused reload, ordersync_config_last_reload_successful = %v, want 0", v)
	}

	// Back to the simulator's key.
	next.SecretKey = st.SecretKey
	if _, err := p.Reload(ctx, next); err != nil {
		t.Fatal(err)
	}
	if k := fetchKind(); k != ordersync.UpstreamNotFound {
		t.Errorf("after the key came back: %v", k)
	}
	if v := lastSuccessful(); v != 1 {
		t.Errorf("after a reload applied, ordersync_config_last_reload_successful = %v, want 1", v)
	}
}
