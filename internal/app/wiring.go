package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// wiring is what every stage of a process is built from: the settings,
// the logger, the metrics registry and the mirror. Program (serve) and
// Local (the CLI's one-shot commands) build their stages through its
// methods, so a stage is configured one way whichever process runs it.
type wiring struct {
	cfg    Config
	logger *slog.Logger
	reg    *prometheus.Registry
	db     *store.DB
	// writer is the process's one MirrorWriter, which every account's
	// Syncer and the pool share (see mirrorWriter).
	writer *worker.MirrorWriter
}

func (w *wiring) component(name string) *slog.Logger { return w.logger.With("component", name) }

// SQLite says whether the mirror is SQLite, whose one writer spends its
// time in cgo calls.
func (w *wiring) SQLite() bool { return w.db.Dialect() == store.DialectSQLite }

// openMirror opens the database with serve's pool settings. migrate says
// whether the schema is brought up to date first.
func (w *wiring) openMirror(ctx context.Context, migrate bool) (err error) {
	w.db, err = store.Open(ctx, store.Config{
		URL: w.cfg.DatabaseURL, Migrate: &migrate, Logger: w.logger,
		MaxOpenConns: w.cfg.DBMaxOpenConns, MaxIdleConns: w.cfg.DBMaxIdleConns, ConnMaxLifetime: w.cfg.DBConnMaxLifetime,
	})
	return err
}

// newClient is the client of an account's payment link service.
func (w *wiring) newClient(a AccountConfig) (*paymentlink.Client, error) {
	return paymentlink.New(paymentlink.Config{BaseURL: a.APIBaseURL, SecretKey: a.SecretKey, Timeout: w.cfg.UpstreamTimeout})
}

// mirrorWriter is the process's one writer to the mirror, made on first
// use: each order it applies is counted under its own account, whichever
// account's Syncer or pool applies it.
func (w *wiring) mirrorWriter() (*worker.MirrorWriter, error) {
	if w.writer != nil {
		return w.writer, nil
	}
	var err error
	w.writer, err = worker.NewMirrorWriter(worker.MirrorWriterConfig{Mirror: w.db, Registerer: w.reg})
	return w.writer, err
}

// closeWriter gives back the fetch sequence's lease the process's writer
// may hold, within a bound: a database that does not answer must not hold
// the shutdown, and the lease then runs out by itself.
func (w *wiring) closeWriter() {
	if w.writer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.writer.Close(ctx); err != nil && w.logger != nil {
		w.logger.Warn("release the fetch sequence's lease", "err", err)
	}
}

// newSyncer is an account's Syncer (breaker, limits, credentials pause);
// its collectors carry the account's name, except the mirror's, which the
// process's writer labels per order.
func (w *wiring) newSyncer(account string, client ordersync.Upstream) (*worker.Syncer, error) {
	writer, err := w.mirrorWriter()
	if err != nil {
		return nil, err
	}
	return worker.NewSyncer(worker.SyncerConfig{
		Upstream: client, Mirror: w.db, Writer: writer, RequestsPerSecond: w.cfg.UpstreamRPS,
		Registerer: accountRegisterer(w.reg, account), Logger: w.component("upstream").With("account", account),
	})
}

// newFollower creates links and tracks orders through the accounts'
// Syncers. onKnown replays the events that arrived before their order was
// known; nil where no queue is open to replay them to.
func (w *wiring) newFollower(syncers worker.Accounts, onKnown func(context.Context, []ordersync.OrderRef)) (*worker.Follower, error) {
	return worker.NewFollower(worker.FollowerConfig{
		Accounts: syncers, Mirror: w.db, Reader: w.db, OnOrdersKnown: onKnown, Logger: w.component("follow"),
	})
}

// newReconciler checks an account's orders through the account's own
// Syncer, so the drift it finds carries the account's label. schedule is
// where due checks are claimed and failed ones deferred; nil for a
// reconciler that only runs on demand (RunOnce) and leaves the schedule
// to serve.
func (w *wiring) newReconciler(account string, syncer *worker.Syncer, schedule ordersync.CheckSchedule) (*worker.Reconciler, error) {
	cfg := worker.ReconcilerConfig{
		Schedule: schedule, Source: w.db, Syncer: syncer, Account: account, Budget: w.cfg.ReconcileRPS,
		HeartbeatInterval: w.cfg.ReceiverHeartbeat,
		EvidenceWindow:    w.cfg.ReconcileEvidenceWindow, EvidenceHold: w.cfg.ReconcileEvidenceHold,
		OnDrift: syncer.RecordDrift, Registerer: accountRegisterer(w.reg, account), Logger: w.component("reconcile").With("account", account),
	}
	if schedule != nil {
		// The receivers' heartbeats are evidence for the schedule; a
		// reconciler run on demand keeps none.
		cfg.Heartbeats = w.db
	}
	return worker.NewReconciler(cfg)
}

// startEmbedded starts the NATS server on the data directory's JetStream
// store. port 0 opens no TCP port.
func (w *wiring) startEmbedded(port int) (*queue.Embedded, error) {
	return queue.StartEmbedded(queue.EmbeddedConfig{
		StoreDir:     datadir.JetStreamDir(w.cfg.DataDir),
		Port:         port,
		PasswordFile: datadir.NATSPasswordFile(w.cfg.DataDir),
		Sync:         queue.SyncPolicy(w.cfg.JetStreamSync),
		Logger:       w.component("nats"),
	})
}

// connectNATS connects to the external NATS server with the configured
// credentials.
func (w *wiring) connectNATS(ctx context.Context, name string) (*nats.Conn, error) {
	return queue.Connect(ctx, queue.ConnConfig{
		URL: w.cfg.NATSURL, Name: name, Logger: w.logger,
		CredsFile: w.cfg.NATSCredsFile, Token: w.cfg.NATSToken, NKeyFile: w.cfg.NATSNKeyFile,
		TLSCA: w.cfg.NATSTLSCA, TLSCert: w.cfg.NATSTLSCert, TLSKey: w.cfg.NATSTLSKey,
	})
}

// accountRegisterer labels an account's collectors with its name.
func accountRegisterer(reg prometheus.Registerer, account string) prometheus.Registerer {
	return prometheus.WrapRegistererWith(prometheus.Labels{"account": account}, reg)
}
