package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/metrics"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/queue"
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
	syncer   *worker.Syncer   // nil before OpenUpstream
	follower *worker.Follower // nil before OpenUpstream
}

// LocalOptions says how a command opens the mirror.
type LocalOptions struct {
	// KeepSchema opens the mirror without bringing its schema up to date,
	// for a command that reports the schema as it is (check); every other
	// command migrates it, as `migrate` does, whatever migrate_on_start says.
	KeepSchema bool
	// Logger receives what the mirror and the stages log; nil discards it.
	Logger *slog.Logger
}

// ReconcileReport is what an on-demand reconcile checked and found.
type ReconcileReport = worker.ReconcileReport

// OpenLocal opens the mirror. The error is the database's own, for the
// command to say which database it could not open.
func OpenLocal(ctx context.Context, cfg Config, opts LocalOptions) (*Local, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Local{wiring: wiring{cfg: cfg, logger: opts.Logger, reg: metrics.NewRegistry()}}
	if err := l.openMirror(ctx, !opts.KeepSchema); err != nil {
		return nil, err
	}
	return l, nil
}

// OpenUpstream opens the service of account, its Syncer and the follower
// over it, for the commands that talk upstream. The follower replays no
// events that arrived before their order was known: that needs the queue,
// which serve has and a command does not.
func (l *Local) OpenUpstream(account string) error {
	a, err := upstreamOf(l.cfg, account)
	if err != nil {
		return err
	}
	client, err := l.newClient(a)
	if err != nil {
		return err
	}
	syncer, err := l.newSyncer(account, client)
	if err != nil {
		return err
	}
	if l.follower, err = l.newFollower(worker.Accounts{account: syncer}, nil); err != nil {
		return err
	}
	l.account, l.syncer = account, syncer
	return nil
}

// upstreamOf is the settings of an account's service, or the setting that
// is missing or wrong.
func upstreamOf(cfg Config, account string) (AccountConfig, error) {
	a, err := ordersync.Accounts[AccountConfig](cfg.Upstreams()).For(account)
	names := AccountSettings(account)
	switch {
	case err != nil:
		return a, fmt.Errorf("%w (see accounts in the config file)", err)
	case a.APIBaseURL == "":
		return a, fmt.Errorf("missing setting: %s", names.APIBaseURL)
	case a.SecretKey == "":
		return a, fmt.Errorf("missing setting: %s", names.SecretKey)
	}
	if err := CheckBaseURL(a.APIBaseURL); err != nil {
		return a, fmt.Errorf("bad setting: %s: %w", names.APIBaseURL, err)
	}
	return a, nil
}

// Config is the configuration the command runs with.
func (l *Local) Config() Config { return l.cfg }

// DB is the mirror.
func (l *Local) DB() *store.DB { return l.db }

// Follower creates links and tracks orders for the account of
// OpenUpstream; nil before it.
func (l *Local) Follower() *worker.Follower { return l.follower }

// Reconcile checks, now, the orders filter selects through the Syncer of
// OpenUpstream's account and reports what changed (`ordersync
// reconcile`); once per Local, as its collectors are registered once. It
// leaves the schedule of due checks to serve. progress, when not nil, is
// called with the report so far after each check.
func (l *Local) Reconcile(ctx context.Context, filter ordersync.ReconcileFilter, progress func(ReconcileReport)) (ReconcileReport, error) {
	if l.syncer == nil {
		return ReconcileReport{}, errors.New("reconcile: no service open (OpenUpstream)")
	}
	rec, err := l.newReconciler(l.account, l.syncer, nil)
	if err != nil {
		return ReconcileReport{}, err
	}
	return rec.RunOnce(ctx, filter, progress)
}

// Close gives back the fetch sequence's lease, which a command that
// fetched holds for up to 2 s more (a serve started next would wait for
// it), and closes the mirror.
func (l *Local) Close() {
	l.closeWriter()
	if l.db != nil {
		_ = l.db.Close()
	}
}

// CheckQueue connects to NATS as serve does, the external server or the
// embedded one on the data directory's store, and asks JetStream whether it
// answers (`ordersync check`). The embedded server opens no TCP port, which
// check tests apart; the caller holds the data directory's lock.
func CheckQueue(ctx context.Context, cfg Config, name string) error {
	w := &wiring{cfg: cfg, logger: slog.New(slog.DiscardHandler)}
	if cfg.NATSURL != "" {
		nc, err := w.connectNATS(ctx, name)
		if err != nil {
			return err
		}
		defer nc.Close()
		return queue.CheckJetStream(ctx, nc)
	}
	emb, err := w.startEmbedded(0)
	if err != nil {
		return err
	}
	defer emb.Shutdown()
	nc, err := emb.Connect(name)
	if err != nil {
		return err
	}
	defer nc.Close()
	return queue.CheckJetStream(ctx, nc)
}

// NewUpstreamClient is the client of an account's service as serve builds
// it, for a command that asks the service itself (`ordersync check`).
func NewUpstreamClient(cfg Config, account string) (*paymentlink.Client, error) {
	w := &wiring{cfg: cfg}
	return w.newClient(cfg.Upstreams()[account])
}
