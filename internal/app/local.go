package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/metrics"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// Local is what a one-shot command of the CLI works with: the mirror, and
// for a command that talks to the service, one account's Syncer and the
// follower over it, built as serve builds them. It opens no queue and
// binds no listener: the commands run beside a running serve (SQLite in
// WAL mode and PostgreSQL both take a second process), and a command's
// metrics, registered as serve registers them, are served by no one.
type Local struct {
	wiring
	account  string
	syncer   *worker.Syncer   // nil unless opened with Upstream
	follower *worker.Follower // nil unless opened with Upstream
}

// LocalOptions says what a command opens beside the mirror.
type LocalOptions struct {
	// Upstream opens Account's service, its Syncer and the follower.
	Upstream bool
	// Account is the merchant account whose service is opened; default
	// ordersync.DefaultAccount.
	Account string
	// KeepSchema opens the mirror without bringing its schema up to date,
	// for a command that reports the schema as it is (check); every other
	// command migrates it, as `migrate` does, whatever migrate_on_start says.
	KeepSchema bool
	// Logger receives what the mirror and the stages log; nil discards it.
	Logger *slog.Logger
}

// ReconcileReport is what an on-demand reconcile checked and found.
type ReconcileReport = worker.ReconcileReport

// OpenLocal opens what opts asks for. The follower replays no events that
// arrived before their order was known: that needs the queue, which serve
// has and a command does not.
func OpenLocal(ctx context.Context, cfg Config, opts LocalOptions) (_ *Local, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Account == "" {
		opts.Account = ordersync.DefaultAccount
	}
	l := &Local{wiring: wiring{cfg: cfg, logger: opts.Logger, reg: metrics.NewRegistry()}, account: opts.Account}
	if err := l.openMirror(ctx, !opts.KeepSchema); err != nil {
		return nil, fmt.Errorf("open database %s: %w", RedactURL(cfg.DatabaseURL), err)
	}
	if !opts.Upstream {
		return l, nil
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	a, err := l.upstream()
	if err != nil {
		return nil, err
	}
	client, err := l.newClient(a)
	if err != nil {
		return nil, err
	}
	if l.syncer, err = l.newSyncer(l.account, client); err != nil {
		return nil, err
	}
	if l.follower, err = l.newFollower(worker.Accounts{l.account: l.syncer}, nil); err != nil {
		return nil, err
	}
	return l, nil
}

// upstream is the settings of the command's account, or the setting that
// is missing or wrong.
func (l *Local) upstream() (AccountConfig, error) {
	account := l.account
	a, err := ordersync.Accounts[AccountConfig](l.cfg.Upstreams()).For(account)
	switch {
	case err != nil:
		return a, fmt.Errorf("%w (see accounts in the config file)", err)
	case a.APIBaseURL == "" && account == ordersync.DefaultAccount:
		return a, fmt.Errorf("missing setting: api_base_url (ORDERSYNC_API_BASE_URL or --api-base-url)")
	case a.SecretKey == "" && account == ordersync.DefaultAccount:
		return a, fmt.Errorf("missing setting: secret_key (ORDERSYNC_SECRET_KEY or --secret-key)")
	case a.APIBaseURL == "" || a.SecretKey == "":
		return a, fmt.Errorf("missing setting: accounts.%s.api_base_url and secret_key", account)
	}
	if err := CheckBaseURL(a.APIBaseURL); err != nil {
		return a, fmt.Errorf("bad setting: api_base_url: %w", err)
	}
	return a, nil
}

// Config is the configuration the command runs with.
func (l *Local) Config() Config { return l.cfg }

// DB is the mirror.
func (l *Local) DB() *store.DB { return l.db }

// Follower creates links and tracks orders for the command's account; nil
// unless opened with Upstream.
func (l *Local) Follower() *worker.Follower { return l.follower }

// Reconcile checks, now, the orders filter selects through the account's
// Syncer and reports what changed (`ordersync reconcile`). It leaves the
// schedule of due checks to serve. progress, when not nil, is called with
// the report so far after each check.
func (l *Local) Reconcile(ctx context.Context, filter ordersync.ReconcileFilter, progress func(ReconcileReport)) (ReconcileReport, error) {
	if l.syncer == nil {
		return ReconcileReport{}, fmt.Errorf("reconcile: the service of account %q is not open", l.account)
	}
	rec, err := l.newReconciler(l.account, l.syncer, nil)
	if err != nil {
		return ReconcileReport{}, err
	}
	return rec.RunOnce(ctx, filter, progress)
}

// Close closes the mirror.
func (l *Local) Close() {
	if l.db != nil {
		_ = l.db.Close()
	}
}
