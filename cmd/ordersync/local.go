package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// local is what the one-shot commands need: the mirror, and for those that
// talk upstream, the client and the one fetch-and-apply path. It runs no
// queue: the commands work beside a running `serve` (SQLite in WAL mode and
// PostgreSQL both take a second process).
type local struct {
	cfg      app.Config
	db       *store.DB
	client   *paymentlink.Client
	syncer   *worker.Syncer
	follower *worker.Follower
}

func openMirror(ctx context.Context, flags *app.ConfigFlags) (*local, error) {
	cfg, err := flags.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, store.Config{URL: cfg.DatabaseURL})
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", app.RedactURL(cfg.DatabaseURL), err)
	}
	return &local{cfg: cfg, db: db}, nil
}

// openUpstream opens the mirror and the account's service.
func openUpstream(ctx context.Context, flags *app.ConfigFlags, account string) (*local, error) {
	l, err := openMirror(ctx, flags)
	if err != nil {
		return nil, err
	}
	a, err := ordersync.Accounts[app.AccountConfig](l.cfg.Upstreams()).For(account)
	switch {
	case err != nil:
		err = fmt.Errorf("%w (see accounts in the config file)", err)
	case a.APIBaseURL == "" && account == ordersync.DefaultAccount:
		err = fmt.Errorf("missing setting: api_base_url (ORDERSYNC_API_BASE_URL or --api-base-url)")
	case a.SecretKey == "" && account == ordersync.DefaultAccount:
		err = fmt.Errorf("missing setting: secret_key (ORDERSYNC_SECRET_KEY or --secret-key)")
	case a.APIBaseURL == "" || a.SecretKey == "":
		err = fmt.Errorf("missing setting: accounts.%s.api_base_url and secret_key", account)
	default:
		if berr := app.CheckBaseURL(a.APIBaseURL); berr != nil {
			err = fmt.Errorf("bad setting: api_base_url: %w", berr)
		}
	}
	if err == nil {
		l.client, err = paymentlink.New(paymentlink.Config{BaseURL: a.APIBaseURL, SecretKey: a.SecretKey, Timeout: l.cfg.UpstreamTimeout})
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err == nil {
		l.syncer, err = worker.NewSyncer(worker.SyncerConfig{Upstream: l.client, Mirror: l.db, Registerer: prometheus.NewRegistry(), Logger: logger})
	}
	if err == nil {
		l.follower, err = worker.NewFollower(worker.FollowerConfig{Accounts: worker.Accounts{account: l.syncer}, Mirror: l.db, Reader: l.db, Logger: logger})
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *local) Close() {
	if l.db != nil {
		_ = l.db.Close()
	}
}

// audit records in the audit trail an action this command took itself,
// not through the admin API, as the operating-system user who ran it. A
// trail that cannot be written is said on stderr, not the command's
// failure: the action has happened.
func (l *local) audit(ctx context.Context, action, object string, err error) {
	rec := ordersync.AuditRecord{Actor: osUser(), Via: ordersync.ViaCLI, Action: action, Object: object, Outcome: ordersync.OutcomeOfError(err)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if aerr := l.db.RecordAudit(ctx, rec); aerr != nil {
		fmt.Fprintf(os.Stderr, "ordersync: the audit trail did not record %s: %v\n", action, aerr)
	}
}

// osUser names who runs this process: the user's login name, or its id
// where the system cannot name it.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}
