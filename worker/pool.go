package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/quietlog"
	"github.com/ordersync/ordersync/internal/retry"
	"github.com/ordersync/ordersync/internal/tracing"
)

// PoolConfig configures a Pool.
type PoolConfig struct {
	Source ordersync.EventSource
	Syncer *Syncer
	// Accounts, when set, routes each event to its account's Syncer; an
	// event of an account not listed is dead-lettered (rejected). When nil,
	// Syncer serves every account.
	Accounts Accounts
	Mirror   ordersync.Mirror
	// Writer applies the group commits: the process's one MirrorWriter,
	// which counts each order under its own account. Default the
	// Syncer's.
	Writer *MirrorWriter
	// FetchConcurrency is how many fetches (and resolutions) run at once.
	// Default 64.
	FetchConcurrency int
	// Pressure, when set, reports the mean wait of the webhooks answered in
	// this process for the queue's ack since its last call, and how many
	// there were (webhook.Receiver.PublishWait). While the wait is above
	// PressureTarget the pool runs fewer fetches at once, so that the
	// receiver gets the CPU and webhooks are answered first (see
	// yieldLoop).
	Pressure func() (wait time.Duration, webhooks int64)
	// PressureTarget is the mean publish wait above which the pool yields;
	// it takes the fetches back below a quarter of it. Default 1ms.
	PressureTarget time.Duration
	// PressureInterval is how often Pressure is read. Default 50ms.
	PressureInterval time.Duration
	// PressureMinRate is the webhooks a second under which the pool does
	// not yield, whatever their wait: a burst the pool could sync as fast
	// as it comes, whose waits a busy moment of the process raised.
	// Default 2000.
	PressureMinRate float64
	// BatchSize is the most events one pull returns and the most orders one
	// mirror transaction applies. Default 100.
	BatchSize int
	// CommitDelay is the longest a fetched order waits for its commit batch
	// to fill. Default 2ms.
	CommitDelay time.Duration
	// PullWait is how long one pull waits at the queue when no event is
	// there. It is a long poll, which returns as soon as an event arrives
	// (see ordersync.EventSource.Next), so it adds no latency: it is the
	// interval at which an idle pool asks again. Default 30s.
	PullWait time.Duration
	// UnresolvedRetryDelays is how long an event whose order the mirror does
	// not know yet waits before each new try; past the schedule it is
	// dead-lettered "unresolved". Default 250ms, 1s, 2s, 5s, 10s.
	UnresolvedRetryDelays []time.Duration
	// MaxAttempts is the attempt past which an event that keeps failing
	// transiently is dead-lettered "retries_exhausted", unless the upstream
	// is in an outage (breaker open, credentials rejected). Default 20.
	MaxAttempts int
	// RetryDelay is the wait before redelivery after a failure of the
	// mirror itself, or of an outage whose end is unknown. Default 1s.
	RetryDelay time.Duration
	// ExtendInterval is how often events held longer than it (a fetch in
	// backoff, a follow-up waiting for a slow fetch) are reported in
	// progress, so the queue does not redeliver them. Keep it well under
	// the queue's ack wait. Default 5s.
	ExtendInterval time.Duration
	// PendingInterval is how often the queue's backlog is polled for
	// ordersync_consumer_pending_messages. Default 5s.
	PendingInterval time.Duration
	// DrainTimeout bounds the drain after Run's context ends: fetches still
	// running then are cancelled and their events redelivered later.
	// Default 15s.
	DrainTimeout time.Duration
	// OnApplied is called after each mirror commit with what it did (say,
	// to wake the outbox relay). It must not block.
	OnApplied func([]ordersync.ApplyResult)
	// OnOrdersKnown is called, from one goroutine of its own, with the
	// orders the mirror saw for the first time, so events dead-lettered as
	// unresolved for them are replayed. Orders that become known while a
	// call runs come together in the next one.
	OnOrdersKnown func(ctx context.Context, refs []ordersync.OrderRef)
	// Evidence, when set, takes evidence that the account's webhooks may
	// have been lost (kind names it, as Reconciler.Tighten does): the pool
	// reports a webhook that arrives for a status a reconciler check had
	// already mirrored ("late_webhook").
	Evidence func(ctx context.Context, account string, now time.Time, kind string) error
	// Registerer receives the pool's collectors; nil keeps them
	// unregistered. The fetch and mirror collectors belong to the Syncer.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Clock      func() time.Time
	// Tracer traces each fetch and apply; nil: off.
	Tracer *tracing.Tracer
}

// DefaultUnresolvedRetryDelays is the schedule on which an event whose order
// is not known yet is tried again. It starts short because the usual case
// is a race, not a stranger: the service posts Created while ordersync is
// still recording the link it just created. About 50s in all.
var DefaultUnresolvedRetryDelays = []time.Duration{
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
}

// DefaultPullWait is how long an idle pull waits for an event before it
// asks again: the queue's long poll, at the JetStream client's own default.
const DefaultPullWait = 30 * time.Second

// codeCacheSize bounds the order id → code cache (per generation): about
// 100 bytes an entry, so two generations stay near 4 MB. A miss costs little
// since a pull's misses are resolved with one read (resolveBatch); at 100,000
// the cache held ~20 MB after ten seconds at full load.
const codeCacheSize = 20_000

// knownBatch bounds the orders one OnOrdersKnown call gets.
const knownBatch = 256

func (c PoolConfig) withDefaults() PoolConfig {
	if c.FetchConcurrency == 0 {
		c.FetchConcurrency = 64
	}
	if c.BatchSize == 0 {
		c.BatchSize = 100
	}
	if c.PressureTarget == 0 {
		c.PressureTarget = time.Millisecond
	}
	if c.PressureInterval == 0 {
		c.PressureInterval = 50 * time.Millisecond
	}
	if c.PressureMinRate == 0 {
		c.PressureMinRate = 2000
	}
	if c.CommitDelay == 0 {
		c.CommitDelay = 2 * time.Millisecond
	}
	if c.PullWait == 0 {
		c.PullWait = DefaultPullWait
	}
	if c.UnresolvedRetryDelays == nil {
		c.UnresolvedRetryDelays = DefaultUnresolvedRetryDelays
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 20
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = time.Second
	}
	if c.ExtendInterval == 0 {
		c.ExtendInterval = 5 * time.Second
	}
	if c.PendingInterval == 0 {
		c.PendingInterval = 5 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 15 * time.Second
	}
	defaultDeps(&c.Registerer, &c.Logger, &c.Clock)
	return c
}

// retryPolicy is the policy of events whose fetch or commit failed:
// redeliveries spread over [d, 1.25d) so they do not return as one herd,
// an outage's expected end spread too.
func (c PoolConfig) retryPolicy() *retry.Policy {
	return &retry.Policy{Schedule: []time.Duration{c.RetryDelay}, Low: 1, High: 1.25, SpreadAsked: true,
		MaxAttempts: c.MaxAttempts, Exhausted: string(ordersync.ReasonRetriesExhausted)}
}

// unresolvedPolicy is the policy of events whose order is not known yet:
// past the schedule, the order is taken to be a stranger.
func (c PoolConfig) unresolvedPolicy() *retry.Policy {
	return &retry.Policy{Schedule: c.UnresolvedRetryDelays, MaxAttempts: len(c.UnresolvedRetryDelays) + 1,
		Exhausted: string(ordersync.ReasonUnresolved)}
}

func (c PoolConfig) validate() error {
	switch {
	case c.Source == nil:
		return errors.New("worker: PoolConfig.Source is required")
	case c.Syncer == nil:
		return errors.New("worker: PoolConfig.Syncer is required")
	case c.Mirror == nil:
		return errors.New("worker: PoolConfig.Mirror is required")
	case c.FetchConcurrency < 1:
		return fmt.Errorf("worker: PoolConfig.FetchConcurrency must be ≥ 1, got %d", c.FetchConcurrency)
	case c.BatchSize < 1:
		return fmt.Errorf("worker: PoolConfig.BatchSize must be ≥ 1, got %d", c.BatchSize)
	case c.CommitDelay < 0:
		return fmt.Errorf("worker: PoolConfig.CommitDelay must be ≥ 0, got %v", c.CommitDelay)
	case c.PullWait < 0:
		return fmt.Errorf("worker: PoolConfig.PullWait must be > 0, got %v", c.PullWait)
	case c.MaxAttempts < 1:
		return fmt.Errorf("worker: PoolConfig.MaxAttempts must be ≥ 1, got %d", c.MaxAttempts)
	case c.RetryDelay < 0:
		return fmt.Errorf("worker: PoolConfig.RetryDelay must be > 0, got %v", c.RetryDelay)
	case c.ExtendInterval < 0:
		return fmt.Errorf("worker: PoolConfig.ExtendInterval must be > 0, got %v", c.ExtendInterval)
	case c.PendingInterval < 0:
		return fmt.Errorf("worker: PoolConfig.PendingInterval must be > 0, got %v", c.PendingInterval)
	case c.DrainTimeout < 0:
		return fmt.Errorf("worker: PoolConfig.DrainTimeout must be > 0, got %v", c.DrainTimeout)
	}
	for i, d := range c.UnresolvedRetryDelays {
		if d <= 0 {
			return fmt.Errorf("worker: PoolConfig.UnresolvedRetryDelays[%d] must be > 0, got %v", i, d)
		}
	}
	return nil
}

// Pool consumes queued events and mirrors the orders they announce.
type Pool struct {
	cfg    PoolConfig
	syncer *Syncer
	writer *MirrorWriter
	mirror ordersync.Mirror
	log    *slog.Logger
	// quiet logs the failures that repeat per event (a fetch or commit
	// failing through an outage) once, then summed up.
	quiet   *quietlog.Log
	now     func() time.Time
	metrics *poolMetrics
	codes   *codeCache

	// retries decides the retries of events whose fetch or commit failed,
	// unresolved those of events whose order is not known yet.
	retries, unresolved *retry.Policy

	mu      sync.Mutex
	flights map[orderKey]*flight

	// room bounds the queued events held at once: a pull takes BatchSize
	// slots, gives back what it did not use, and every settled queued
	// event gives back one.
	room *semaphore.Weighted
	// slots bounds the fetches running at once (yieldLoop moves it).
	slots *fetchSlots
	// unsettled counts queued events not settled yet; the drain waits for it.
	unsettled sync.WaitGroup
	// workers run the jobs: FetchConcurrency of them, and one more for
	// each fetch parked at its account's gate (fetcher.park).
	workers sync.WaitGroup

	jobs    chan job
	commits chan commitItem
	known   chan ordersync.OrderRef
	// pulled is signalled, without blocking, by a pull that brought
	// events: it wakes yieldLoop, which sleeps while no webhook comes.
	pulled chan struct{}
}

// NewPool returns a Pool; call Run.
func NewPool(cfg PoolConfig) (*Pool, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newPoolMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new worker pool: %w", err)
	}
	p := &Pool{
		cfg:        cfg,
		syncer:     cfg.Syncer,
		writer:     cfg.Writer,
		mirror:     cfg.Mirror,
		log:        cfg.Logger,
		quiet:      quietlog.New(cfg.Logger, quietlog.DefaultInterval),
		now:        cfg.Clock,
		metrics:    m,
		codes:      newCodeCache(codeCacheSize),
		flights:    make(map[orderKey]*flight),
		room:       semaphore.NewWeighted(int64(3*cfg.BatchSize + cfg.FetchConcurrency)),
		slots:      newFetchSlots(cfg.FetchConcurrency),
		retries:    cfg.retryPolicy(),
		unresolved: cfg.unresolvedPolicy(),
	}
	if p.writer == nil {
		p.writer = cfg.Syncer.writer
	}
	m.fetchLimit.Set(float64(cfg.FetchConcurrency))
	return p, nil
}

// Run pulls and processes events until ctx is cancelled, then drains: it
// stops pulling, lets running fetches and commits finish (cancelling them
// after DrainTimeout), settles every queued event it holds and returns. A Pool
// runs once.
func (p *Pool) Run(ctx context.Context) error {
	defer p.quiet.Close()
	p.jobs = make(chan job, p.cfg.FetchConcurrency)
	p.commits = make(chan commitItem, 2*p.cfg.BatchSize)
	p.known = make(chan ordersync.OrderRef, 1024)
	p.pulled = make(chan struct{}, 1)

	// Work outlives ctx so the drain can finish what was started.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	auxCtx, cancelAux := context.WithCancel(ctx)
	defer cancelAux()

	var committer, aux sync.WaitGroup
	for range p.cfg.FetchConcurrency {
		p.workers.Go(func() { p.work(workCtx) })
	}
	committer.Go(func() { p.commitLoop(workCtx) })
	aux.Go(func() { p.knownLoop(workCtx) })
	aux.Go(func() { p.extendLoop(auxCtx) })
	aux.Go(func() { p.pendingLoop(auxCtx) })
	aux.Go(func() { p.yieldLoop(auxCtx) })

	p.pull(ctx)

	drained := make(chan struct{})
	go func() { p.unsettled.Wait(); close(drained) }()
	t := time.NewTimer(p.cfg.DrainTimeout)
	select {
	case <-drained:
		t.Stop()
	case <-t.C:
		p.log.Warn("worker drain timed out: cancelling running fetches; their events will be redelivered",
			"drain_timeout", p.cfg.DrainTimeout)
		cancelWork()
		<-drained
	}
	close(p.jobs)
	p.workers.Wait()
	close(p.commits)
	committer.Wait()
	cancelAux()
	close(p.known)
	aux.Wait()
	return nil
}

// pendingLoop polls the queue's backlog for the pending gauge.
func (p *Pool) pendingLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.PendingInterval)
	defer t.Stop()
	for {
		n, err := p.cfg.Source.Pending(ctx)
		if err == nil {
			p.metrics.pendingMessages.Set(float64(n))
		} else if ctx.Err() == nil {
			p.log.Debug("poll queue backlog failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error { return retry.Sleep(ctx, d) }
