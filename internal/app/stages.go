package app

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/metrics"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/webhook"
	"github.com/ordersync/ordersync/worker"
)

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
	if p.relay, err = worker.NewRelay(worker.RelayConfig{Outbox: p.db, Publisher: p.queue,
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
			p.notifyMirrorChanged()
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
