package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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

	// mirrorMu guards mirrorChanged, the channel closed (and replaced) at
	// the worker pool's next commit to the mirror.
	mirrorMu      sync.Mutex
	mirrorChanged chan struct{}

	closeOnce sync.Once
}

// MirrorChanged returns a channel closed at the worker pool's next commit
// of events to the mirror. A caller waiting for the mirror to hold a state
// takes the channel, checks the mirror, and waits on the channel if the
// state is not there yet.
func (p *Program) MirrorChanged() <-chan struct{} {
	p.mirrorMu.Lock()
	defer p.mirrorMu.Unlock()
	if p.mirrorChanged == nil {
		p.mirrorChanged = make(chan struct{})
	}
	return p.mirrorChanged
}

// notifyMirrorChanged wakes the callers of MirrorChanged.
func (p *Program) notifyMirrorChanged() {
	p.mirrorMu.Lock()
	defer p.mirrorMu.Unlock()
	if p.mirrorChanged != nil {
		close(p.mirrorChanged)
		p.mirrorChanged = nil
	}
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

// Undelivered is how many events are still on their way to the endpoint:
// outbox messages not yet published (for any endpoint, up to one) and the
// events its consumer has not settled. The outbox is read first, so an
// event published between the two reads is counted by the second.
func (p *Program) Undelivered(ctx context.Context, endpointID string) (int, error) {
	unsent, err := p.db.PendingOutbox(ctx, 1)
	if err != nil {
		return 0, err
	}
	backlog, err := p.queue.EndpointBacklog(ctx, endpointID)
	if err != nil {
		return 0, err
	}
	return len(unsent) + int(backlog), nil
}

// Config is the configuration the program runs with.
func (p *Program) Config() Config { return p.cfg }

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
		// A successor on the mirror (a rolling restart) takes fetch
		// numbers at once rather than after the lease runs out.
		p.closeWriter()
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
