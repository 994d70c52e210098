package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/tracing"
	"github.com/ordersync/ordersync/metrics"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhook"
	"github.com/ordersync/ordersync/worker"
)

// Program is the whole service in one process: webhook receiver, worker
// pool, outbox relay, reconciler and admin API over one queue and one
// database. Tests and the demo start it on port 0.
type Program struct {
	wiring
	roles roles

	embedded *queue.Embedded
	nc       *nats.Conn
	queue    *queue.Queue
	// clients and syncers hold one entry per account, the default's
	// under ordersync.DefaultAccount.
	clients map[string]*paymentlink.Client
	syncers worker.Accounts

	pool        *worker.Pool
	relay       *worker.Relay
	reconcilers []*worker.Reconciler
	pruner      *worker.Pruner
	replayer    *worker.Replayer
	follower    *worker.Follower
	dispatcher  *dispatch.Dispatcher // nil unless the role runs workers
	receiver    *webhook.Receiver
	// tracer traces the pipeline's hops; nil with tracing off. ownTracer
	// says Close shuts it down (one a test gave is the test's).
	tracer    *tracing.Tracer
	ownTracer bool
	// space watches the free space under the embedded JetStream and the
	// SQLite file; nil when neither is used, or with min_free_space off.
	space *datadir.Space

	webhookLn, adminLn   net.Listener
	webhookSrv, adminSrv *http.Server
	// api is the admin listener's handler, whose replay jobs end with Run.
	api *admin.Server
	// unlockDataDir releases the data directory's lock; nil when not held.
	unlockDataDir func()
	// draining is set when shutdown begins: /readyz answers 503 from then.
	draining atomic.Bool

	// reloadMu serialises reloads; live is the configuration in force
	// (cfg, the one the process started with, as far as a reload changed
	// it), level the logger's level a reload sets (nil: none).
	reloadMu      sync.Mutex
	live          Config
	level         *slog.LevelVar
	reloadMetrics reloadMetrics

	closeOnce sync.Once
}

// NewProgram opens the database and the queue, builds every stage and binds
// both listeners. Nothing runs until Run.
func NewProgram(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Program, err error) {
	if err := cfg.ValidateServe(); err != nil {
		return nil, err
	}
	// Lines logged with a request's context carry its id (withRequestID).
	logger = slog.New(requestLogHandler{logger.Handler()})
	p := &Program{wiring: wiring{cfg: cfg, logger: logger, reg: metrics.NewRegistry()}, live: cfg}
	p.roles, _ = parseRoles(cfg.Role) // validateServe checked it
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.reloadMetrics, err = newReloadMetrics(p.reg); err != nil {
		return nil, err
	}
	if err := datadir.MakePrivate(cfg.DataDir, logger); err != nil {
		return nil, err
	}
	// The embedded NATS server owns the JetStream store in the data
	// directory: a second one on it would corrupt it.
	if cfg.NATSURL == "" {
		if p.unlockDataDir, err = datadir.Lock(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	if p.tracer = cfg.tracer; p.tracer == nil {
		if p.tracer, err = tracing.New(ctx, cfg.TracingConfig()); err != nil {
			return nil, err
		}
		p.ownTracer = true
	}
	if err := p.openMirror(ctx, cfg.MigrateOnStart); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	datadir.WarnIfSharedSQLite(logger, p.db.Path())
	if err := p.seedEndpoints(ctx); err != nil {
		return nil, err
	}
	if err := p.openQueue(ctx); err != nil {
		return nil, err
	}
	if p.space, err = p.watchSpace(); err != nil {
		return nil, err
	}
	p.clients = map[string]*paymentlink.Client{}
	for name, a := range cfg.Upstreams() {
		if p.clients[name], err = p.newClient(a); err != nil {
			return nil, fmt.Errorf("account %s: %w", name, err)
		}
	}
	if err := p.buildStages(); err != nil {
		return nil, err
	}
	if p.roles.receiver {
		if p.webhookLn, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("webhook listener: %w", err)
		}
	}
	if p.adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	return p, nil
}

// seedEndpoints writes the file's endpoints into the database, where every
// process finds them beside those created through the admin API.
func (p *Program) seedEndpoints(ctx context.Context) error {
	params, err := p.cfg.EndpointParams()
	if err != nil {
		return err
	}
	if err := p.db.SyncConfigEndpoints(ctx, params, p.cfg.EndpointSecretGrace); err != nil {
		return fmt.Errorf("write the configured endpoints: %w", err)
	}
	return nil
}

func (p *Program) openQueue(ctx context.Context) (err error) {
	if p.cfg.NATSURL == "" {
		storeDir, passwordFile := datadir.JetStreamDir(p.cfg.DataDir), datadir.NATSPasswordFile(p.cfg.DataDir)
		if p.embedded, err = p.startEmbedded(p.cfg.NATSPort); err != nil {
			return fmt.Errorf("start embedded NATS: %w", err)
		}
		datadir.WarnIfShared(p.logger, "JetStream store", storeDir)
		if p.cfg.NATSPort != 0 {
			datadir.WarnIfShared(p.logger, "NATS password file", passwordFile)
		}
		if p.nc, err = p.embedded.Connect("ordersync"); err != nil {
			return fmt.Errorf("connect to embedded NATS: %w", err)
		}
	} else {
		if p.nc, err = p.connectNATS(ctx, "ordersync "+p.cfg.Role); err != nil {
			return fmt.Errorf("connect to NATS: %w", err)
		}
	}
	qcfg := p.cfg.QueueConfig()
	qcfg.Registerer, qcfg.Logger = p.reg, p.logger
	if p.queue, err = queue.New(ctx, p.nc, qcfg); err != nil {
		return fmt.Errorf("set up JetStream: %w", err)
	}
	return nil
}

func (p *Program) buildStages() (err error) {
	log := p.component
	// Each account has its own Syncer; see newSyncer.
	p.syncers = worker.Accounts{}
	for name, client := range p.clients {
		if p.syncers[name], err = p.newSyncer(name, client); err != nil {
			return err
		}
	}
	defaultSyncer := p.syncers[ordersync.DefaultAccount]
	if p.relay, err = worker.NewRelay(worker.RelayConfig{Outbox: p.db, Publisher: p.queue, CommitOrderIDs: p.db.Dialect() == store.DialectSQLite,
		Registerer: p.reg, Logger: log("relay"), Tracer: p.tracer}); err != nil {
		return err
	}
	if p.replayer, err = worker.NewReplayer(worker.ReplayerConfig{DeadLetters: p.db, Publisher: p.queue, Accounts: p.syncers, Logger: log("replay")}); err != nil {
		return err
	}
	onKnown := func(ctx context.Context, refs []ordersync.OrderRef) {
		if n, err := p.replayer.ReplayUnresolved(ctx, refs...); err != nil {
			p.logger.Error("replay unresolved events", "orders", len(refs), "err", err)
		} else if n > 0 {
			p.logger.Info("replayed unresolved events for newly known orders", "orders", len(refs), "events", n)
		}
	}
	if p.roles.receiver {
		proxies, err := parseCIDRs(p.cfg.TrustedProxies)
		if err != nil {
			return err
		}
		accounts := map[string]webhook.AccountConfig{}
		for name, a := range p.cfg.Accounts {
			accounts[name] = webhook.AccountConfig{Secrets: a.WebhookSecrets}
		}
		p.receiver, err = webhook.New(webhook.Config{
			Secrets: p.cfg.WebhookSecrets, Accounts: accounts, Insecure: p.cfg.InsecureNoWebhookSignature, TrustedProxies: proxies,
			Publisher: p.queue, Admit: p.admit, Recorder: p.db, Rejections: p.db, RejectionFlushInterval: p.cfg.RejectionFlushInterval,
			Registerer: p.reg, Logger: log("webhook"), Tracer: p.tracer,
		})
		if err != nil {
			return err
		}
		p.webhookSrv = &http.Server{Handler: p.closeWhileDraining(withRequestID(proxies, log("webhook"), p.receiver)), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			MaxHeaderBytes: maxHeaderBytes}
	}
	// Webhooks answered in this process come first: the pool yields the CPU
	// to the receiver during a burst. Only where a publish waits for little
	// but this process's CPU: the embedded NATS with its default sync
	// policy. An external server's publish also waits for its network and
	// replicas, and one that fsyncs for the disk; yielding shortens neither,
	// and would stop the workers while webhooks flow.
	var pressure func() (time.Duration, int64)
	sync := queue.SyncPolicy(p.cfg.JetStreamSync)
	if p.receiver != nil && p.roles.worker && p.embedded != nil && (sync == "" || sync == queue.SyncDefault) {
		pressure = p.receiver.PublishWait
	}
	// The pool's evidence of lost webhooks goes to the account's
	// reconciler, whose record in the mirror every process's checks read.
	reconcilers := map[string]*worker.Reconciler{}
	evidence := func(ctx context.Context, account string, now time.Time, kind string) error {
		if r := reconcilers[account]; r != nil {
			return r.Tighten(ctx, now, kind)
		}
		return nil
	}
	p.pool, err = worker.NewPool(worker.PoolConfig{
		Source: p.queue.Events(), Syncer: defaultSyncer, Accounts: p.syncers, Mirror: p.db,
		FetchConcurrency: p.cfg.Workers,
		Pressure:         pressure,
		OnApplied: func(results []ordersync.ApplyResult) {
			var msgs []ordersync.OutboxMessage
			for _, r := range results {
				msgs = append(msgs, r.Messages...)
			}
			p.relay.Offer(msgs)
		},
		OnOrdersKnown: onKnown,
		Evidence:      evidence,
		Registerer:    p.reg, Logger: log("worker"), Tracer: p.tracer,
	})
	if err != nil {
		return err
	}
	if p.follower, err = p.newFollower(p.syncers, onKnown); err != nil {
		return err
	}
	for name, syncer := range p.syncers {
		rec, err := p.newReconciler(name, syncer, p.db)
		if err != nil {
			return err
		}
		p.reconcilers = append(p.reconcilers, rec)
		reconcilers[name] = rec
	}
	p.pruner, err = worker.NewPruner(worker.PrunerConfig{
		Store: p.db, OutboxRetention: p.cfg.OutboxRetention, EventLogRetention: p.cfg.EventLogRetention, AuditRetention: p.cfg.AuditRetention,
		ReplayJobRetention: p.cfg.ReplayJobRetention, Registerer: p.reg, Logger: log("prune"),
	})
	if err != nil {
		return err
	}
	orders, outboxAge := metrics.NewOrdersCollector(p.db, 5*time.Second, p.logger), metrics.NewOutboxAgeCollector(p.db, 5*time.Second, p.logger)
	if err := metrics.RegisterAll(p.reg, metrics.Of(&orders), metrics.Of(&outboxAge)); err != nil {
		return err
	}
	// The read side's freshness: the age of the oldest change the indexer
	// has not counted, read at scrape time from the mirror, so it rises
	// also when no process runs the indexer.
	if err := p.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ordersync_indexer_lag_seconds",
		Help: "Age of the oldest mirror change the back office's indexer has not counted (search words, daily totals); 0 when none waits.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := p.db.IndexStatus(ctx)
		if err != nil {
			p.logger.Error("read the indexer's progress for metrics", "err", err)
			return math.NaN()
		}
		return s.Lag(time.Now()).Seconds()
	})); err != nil {
		return err
	}
	// HTTP deliveries run with the workers, in the one process holding the
	// deliveries lease (see Run).
	var deliverer ordersync.Deliverer
	if p.roles.worker {
		dc := p.cfg.DispatchConfig()
		dc.Endpoints, dc.DeadLetters, dc.Log, dc.Stream = p.db, p.db, p.db, p.queue
		dc.Registerer, dc.Logger, dc.Tracer = p.reg, log("delivery"), p.tracer
		p.dispatcher, err = dispatch.New(dc)
		if err != nil {
			return err
		}
		deliverer = p.dispatcher
	}
	adminProxies, err := parseCIDRs(p.cfg.TrustedProxies)
	if err != nil {
		return err
	}
	api, err := admin.New(admin.Config{
		Orders: p.db, DeadLetters: p.db, Follower: p.follower, Replayer: p.replayer, ReplayJobs: p.db, OrderCodes: p.db,
		Endpoints: p.db, DeliveryDeadLetters: p.db, Deliverer: deliverer, SecretGrace: p.cfg.EndpointSecretGrace,
		Metrics: metrics.Handler(p.reg), Ready: p.ready, Tokens: p.cfg.AdminTokens, Audit: p.db, Sessions: p.db,
		Exports: p.db, Reports: p.db, Overview: p.db, TrustedProxies: adminProxies, Registerer: p.reg, Logger: log("admin"),
		Stores: p.cfg.StoreNames(),
	})
	if err != nil {
		return err
	}
	// A request that needs the upstream takes at most a fetch's retry
	// budget plus a link creation; the write timeout leaves room for that.
	p.api = api
	p.adminSrv = &http.Server{Handler: withRequestID(adminProxies, log("admin"), api), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: maxHeaderBytes}
	return nil
}

// maxHeaderBytes bounds a request's headers on both listeners: a webhook's
// or an admin request's are a few hundred bytes.
const maxHeaderBytes = 8 << 10

// watchSpace watches the filesystems this process writes its data to:
// the embedded JetStream store and a SQLite file.
func (p *Program) watchSpace() (*datadir.Space, error) {
	mark, err := datadir.ParseWatermark(p.cfg.MinFreeSpace)
	if err != nil || mark.Off {
		return nil, err
	}
	dirs := map[string]string{}
	if p.embedded != nil {
		dirs["data"], dirs["jetstream"] = p.cfg.DataDir, datadir.JetStreamDir(p.cfg.DataDir)
	}
	if path := p.db.Path(); path != "" {
		dirs["database"] = filepath.Dir(path)
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	return datadir.NewSpace(datadir.SpaceConfig{Dirs: dirs, Watermark: mark, Statfs: p.cfg.statfs, Registerer: p.reg, Logger: p.logger})
}

// admit refuses webhooks at once while they could not be made durable:
// the data's disk is below its watermark, or the embedded JetStream failed
// a write and waits for room to be reloaded (its streams answer no
// publish meanwhile, so each would wait for the publish timeout).
func (p *Program) admit() error {
	if p.space != nil {
		if err := p.space.Low(); err != nil {
			return err
		}
	}
	if p.embedded != nil {
		return p.embedded.WriteErr()
	}
	return nil
}

// ready is /readyz: 503 naming the cause while a webhook cannot be made
// durable (admit, then the database, then a probe write to the queue).
func (p *Program) ready(ctx context.Context) error {
	if p.draining.Load() {
		return errDraining
	}
	if err := p.admit(); err != nil {
		return err
	}
	if err := p.db.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := p.queue.Ready(ctx); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return nil
}

// errDraining is why a process that is shutting down is not ready.
var errDraining = errors.New("draining: shutting down")

// closeWhileDraining answers every request with Connection: close once the
// drain began, so a client's connections end cleanly after their answer and
// its next request opens one where the load balancer now sends it, rather
// than finding an idle one closed under it when the listener stops.
func (p *Program) closeWhileDraining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// WebhookURL is where the provider must post webhooks; "" when this process
// runs no receiver.
func (p *Program) WebhookURL() string {
	if p.webhookLn == nil {
		return ""
	}
	scheme := "http"
	if p.cfg.TLSCertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + p.webhookLn.Addr().String() + webhook.Path
}

// AdminURL is the base of the admin API.
func (p *Program) AdminURL() string { return "http://" + p.adminLn.Addr().String() }

// Registry is the program's metrics registry.
func (p *Program) Registry() *prometheus.Registry { return p.reg }

// DB is the program's mirror.
func (p *Program) DB() *store.DB { return p.db }

// CountPaidTriggers reads every message on the PAID subject, as a
// fulfilment service would, and counts them per order.
func (p *Program) CountPaidTriggers(ctx context.Context) (map[string]int, error) {
	js, err := jetstream.New(p.nc)
	if err != nil {
		return nil, err
	}
	qcfg := p.cfg.QueueConfig()
	return queue.CountPerOrder(ctx, js, qcfg.OrdersStream, ordersync.Namespace(qcfg.SubjectPrefix).Subject(ordersync.SubjectPaid))
}

// Config is the configuration the program runs with.
func (p *Program) Config() Config { return p.cfg }

// Run serves until ctx is cancelled, then shuts down in order: drain (see
// drain), stop taking webhooks and finish those in flight, let the workers
// finish and ack what they hold, publish what the outbox has, stop the
// admin API. It returns the first stage failure.
func (p *Program) Run(ctx context.Context) error {
	p.logger.Info("ordersync serving", "role", p.cfg.Role, "webhooks", p.WebhookURL(), "admin", p.AdminURL(),
		"database", RedactURL(p.cfg.DatabaseURL), "nats", p.natsDescription())
	p.logger.Info("settings in effect", p.cfg.SettingsAttr())

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	errc := make(chan error, 6)
	var serving, working sync.WaitGroup
	run := func(wg *sync.WaitGroup, name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	if p.roles.receiver {
		run(&serving, "webhook server", func() error {
			if p.cfg.TLSCertFile != "" {
				return p.webhookSrv.ServeTLS(p.webhookLn, p.cfg.TLSCertFile, p.cfg.TLSKeyFile)
			}
			return p.webhookSrv.Serve(p.webhookLn)
		})
		run(&working, "receiver heartbeat", func() error {
			p.receiver.Heartbeat(workCtx, p.db, p.cfg.ReceiverHeartbeat)
			return nil
		})
	}
	run(&serving, "admin server", func() error { return p.adminSrv.Serve(p.adminLn) })
	if p.space != nil {
		run(&working, "disk space", func() error {
			p.space.Run(workCtx)
			return nil
		})
	}
	if p.roles.worker {
		run(&working, "workers", func() error { return p.pool.Run(workCtx) })
		// The mirror's writers keep its read side (search words, report
		// buckets) following their writes; on PostgreSQL the indexers of
		// several processes take turns under a lock.
		run(&working, "indexer", func() error { return p.db.RunIndexer(workCtx) })
		// One process delivers for a deployment, under a lease like the
		// relay's: an order's events are then held in one process's lanes,
		// so an endpoint gets them in order however many workers run.
		run(&working, "deliveries", func() error { return p.lead(workCtx, "deliveries", p.dispatcher.Run) })
	}
	if p.roles.relay {
		run(&working, "relay", func() error { return p.lead(workCtx, "relay", p.relay.Run) })
	}
	if p.roles.reconciler && p.cfg.reconcileOn() {
		run(&working, "reconciler", func() error { return p.lead(workCtx, "reconciler", p.runReconcilers) })
	}
	if p.roles.reconciler && p.pruner.Enabled() {
		run(&working, "pruner", func() error { return p.lead(workCtx, "pruner", p.pruner.Run) })
	}

	var runErr error
	select {
	case <-ctx.Done():
		runErr = p.drain(errc)
	case runErr = <-errc:
		p.draining.Store(true)
		p.logger.Error("stage failed; shutting down", "err", runErr)
	}
	p.logger.Info("shutting down: no new webhooks, draining workers")
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.webhookSrv != nil {
		if err := p.webhookSrv.Shutdown(shutdown); err != nil {
			p.logger.Warn("webhook server shutdown", "err", err)
		}
	}
	stopWork()
	working.Wait() // workers settle what they hold; the relay flushes
	if err := p.adminSrv.Shutdown(shutdown); err != nil {
		p.logger.Warn("admin server shutdown", "err", err)
	}
	p.api.Close() // replay jobs publish to the queue, which closes after Run
	serving.Wait()
	p.logger.Info("ordersync stopped")
	return runErr
}

// drain turns /readyz to 503 at once and keeps both listeners serving for
// ShutdownDrain, so that a load balancer's probe takes the process out of
// rotation before its ports close and no webhook meets a refused
// connection. A stage failing meanwhile ends the drain.
func (p *Program) drain(errc <-chan error) error {
	p.draining.Store(true)
	if p.cfg.ShutdownDrain <= 0 {
		return nil
	}
	p.logger.Info("draining: /readyz answers 503 while the listeners keep serving", "drain", p.cfg.ShutdownDrain)
	t := time.NewTimer(p.cfg.ShutdownDrain)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case err := <-errc:
		p.logger.Error("stage failed while draining; shutting down", "err", err)
		return err
	}
}

// runReconcilers runs every account's reconciler until ctx ends.
func (p *Program) runReconcilers(ctx context.Context) error {
	errs := make(chan error, len(p.reconcilers))
	for _, r := range p.reconcilers {
		go func() { errs <- r.Run(ctx) }()
	}
	var err error
	for range p.reconcilers {
		err = errors.Join(err, <-errs)
	}
	return err
}

// lead runs a stage of which only one may act at a time across processes
// (the outbox relay, the reconciler, the pruner): on an external NATS it runs only while
// this process holds the role's lease, and campaigns otherwise; a holder
// that dies loses the lease after its TTL. With embedded NATS there is one
// process, so it just runs.
func (p *Program) lead(ctx context.Context, role string, run func(context.Context) error) error {
	if p.embedded != nil {
		return run(ctx)
	}
	// The lease bucket may not be reachable yet (NATS restarting, a
	// cluster electing): keep trying rather than take the process down.
	// The waits are jittered, so processes that lost NATS together do not
	// all campaign in the same instant when it comes back.
	var l *queue.Leader
	err := backoff.RetryNotify(func() error {
		var err error
		l, err = queue.NewLeader(ctx, p.nc, queue.LeaderConfig{
			Bucket: p.cfg.NATSNamespace + "_leaders", Name: role, Replicas: p.cfg.NATSReplicas, TTL: p.cfg.LeaderTTL,
			Registerer: p.reg, Logger: p.logger.With("component", "leader"),
		})
		return err
	}, backoff.WithContext(leaderRetry(), ctx), func(err error, wait time.Duration) {
		p.logger.Error("leader election unavailable; retrying", "role", role, "retry_in", wait, "err", err)
	})
	if err != nil {
		return nil // only the context ends the retries
	}
	return l.Run(ctx, run)
}

// leaderRetry is the schedule of campaigns for a lease that cannot be
// reached: from a second, doubling to 30 s, jittered by half, never giving up.
func leaderRetry() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(backoff.WithInitialInterval(time.Second),
		backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0))
}

func (p *Program) natsDescription() string {
	if p.embedded != nil {
		if u := p.embedded.ClientURL(); u != "" {
			return "embedded, " + u
		}
		return "embedded, in-process"
	}
	return RedactURL(p.cfg.NATSURL)
}

// Close releases everything NewProgram opened. Run must have returned.
func (p *Program) Close() {
	p.closeOnce.Do(func() {
		for _, ln := range []net.Listener{p.webhookLn, p.adminLn} {
			if ln != nil {
				_ = ln.Close()
			}
		}
		if p.receiver != nil {
			p.receiver.Close()
		}
		if p.nc != nil {
			_ = p.nc.Drain()
			p.nc.Close()
		}
		if p.embedded != nil {
			p.embedded.Shutdown()
		}
		if p.db != nil {
			_ = p.db.Close()
		}
		if p.unlockDataDir != nil {
			p.unlockDataDir()
		}
		if p.ownTracer {
			// The spans still buffered go out, within a bound: a collector
			// that is down must not hold the shutdown.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := p.tracer.Shutdown(ctx); err != nil {
				p.logger.Warn("export the last spans", "err", err)
			}
			cancel()
		}
	})
}
