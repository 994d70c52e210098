package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ordersync/ordersync/internal/redact"
)

// Run serves until ctx is cancelled, then shuts down in order: drain (see
// drain), stop taking webhooks and finish those in flight, let the workers
// finish and ack what they hold, publish what the outbox has, stop the
// admin API. It returns the first stage failure.
func (p *Program) Run(ctx context.Context) error {
	p.logger.Info("ordersync serving", "role", p.cfg.Role, "webhooks", p.WebhookURL(), "admin", p.AdminURL(),
		"database", redact.URL(p.cfg.DatabaseURL), "nats", p.natsDescription())
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

func (p *Program) natsDescription() string {
	if p.embedded != nil {
		if u := p.embedded.ClientURL(); u != "" {
			return "embedded, " + u
		}
		return "embedded, in-process"
	}
	return redact.URL(p.cfg.NATSURL)
}
