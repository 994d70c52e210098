package app

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
)

// TestLocalReconcilesAsServe: a one-shot command's stages are serve's, so
// a reconcile of a second account through Local finds the payment no
// webhook announced and counts it, and its fetches, under that account's
// own label, in a registry laid out as serve's.
func TestLocalReconcilesAsServe(t *testing.T) {
	acme, acmeURL := startSim(t, sim.Config{SecretKey: "sk_acme", Seed: 12})
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = filepath.Join(cfg.DataDir, "ordersync.db")
	cfg.Accounts = map[string]AccountConfig{"acme": {APIBaseURL: acmeURL, SecretKey: "sk_acme"}}
	ctx := context.Background()
	l, err := OpenLocal(ctx, cfg, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	if err := l.OpenUpstream("nobody"); !errors.Is(err, ordersync.ErrUnknownAccount) {
		t.Fatalf("OpenUpstream(nobody) = %v, want ErrUnknownAccount", err)
	}
	if err := l.OpenUpstream("acme"); err != nil {
		t.Fatal(err)
	}
	amount := ordersync.MustAmount("12.50")
	res, err := l.Follower().CreatePaymentLink(ctx, "acme", ordersync.PaymentLinkParams{Amount: &amount})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Follower().TrackOrder(ctx, "acme", res.OrderCode); err != nil {
		t.Fatal(err)
	}
	if _, err := acme.Pay(res.OrderCode, ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Reconcile(ctx, ordersync.ReconcileFilter{Account: "acme"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changed) != 1 || rep.Changed[0].OrderCode != res.OrderCode || rep.Changed[0].To != ordersync.StatusPaid {
		t.Fatalf("reconcile changed %+v, want %s to PAID", rep.Changed, res.OrderCode)
	}
	if got := labelledValue(t, l.reg, "ordersync_drift_total", map[string]string{"account": "acme", "kind": "missed_webhook"}); got != 1 {
		t.Errorf(`ordersync_drift_total{account="acme",kind="missed_webhook"} = %v, want 1`, got)
	}
	if got := labelledValue(t, l.reg, "ordersync_fetch_requests_total", map[string]string{"account": "acme"}); got < 2 {
		t.Errorf(`ordersync_fetch_requests_total{account="acme"} = %v, want the track and the check counted`, got)
	}
}

// TestLocalKeepSchema: check opens the mirror as it is; every other
// command brings its schema up to date, as migrate does, even with
// migrate_on_start off.
func TestLocalKeepSchema(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DatabaseURL = filepath.Join(t.TempDir(), "ordersync.db")
	cfg.MigrateOnStart = false
	ctx := context.Background()
	version := func(opts LocalOptions) (current, latest int64) {
		t.Helper()
		l, err := OpenLocal(ctx, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if current, latest, err = l.DB().SchemaVersion(ctx); err != nil {
			t.Fatal(err)
		}
		return current, latest
	}
	if current, latest := version(LocalOptions{KeepSchema: true}); current >= latest {
		t.Fatalf("KeepSchema: a new mirror is at version %d of %d, want it left unmigrated", current, latest)
	}
	if current, latest := version(LocalOptions{}); current != latest {
		t.Fatalf("a command's mirror is at version %d of %d, want it migrated", current, latest)
	}
}

// startSim starts a simulator on a loopback port for the test's length and
// returns it with its base URL.
func startSim(t *testing.T, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s, url
}
