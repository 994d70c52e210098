package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/batch"
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
	// BatchSize is the most events one pull returns and the most orders one
	// mirror transaction applies. Default 100.
	BatchSize int
	// CommitDelay is the longest a fetched order waits for its commit batch
	// to fill. Default 2ms.
	CommitDelay time.Duration
	// PullWait is how long one pull waits for a batch to fill; it bounds
	// the latency the pull adds when events trickle in. Default 20ms.
	PullWait time.Duration
	// UnresolvedRetryDelays is how long an event whose order the mirror does
	// not know yet waits before each new try; past the schedule it is
	// dead-lettered "unresolved". Default 250ms, 1s, 2s, 5s, 10s.
	UnresolvedRetryDelays []time.Duration
	// MaxAttempts is the delivery past which an event that keeps failing
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
	// Registerer receives the pool's collectors; nil keeps them
	// unregistered. The fetch and mirror collectors belong to the Syncer.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Clock      func() time.Time
}

// DefaultUnresolvedRetryDelays is the schedule on which an event whose order
// is not known yet is tried again. It starts short because the usual case
// is a race, not a stranger: the service posts Created while ordersync is
// still recording the link it just created. About 50s in all.
var DefaultUnresolvedRetryDelays = []time.Duration{
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
}

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
	if c.CommitDelay == 0 {
		c.CommitDelay = 2 * time.Millisecond
	}
	if c.PullWait == 0 {
		c.PullWait = 20 * time.Millisecond
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

func (c PoolConfig) validate() error {
	switch {
	case c.Source == nil:
		return errors.New("PoolConfig.Source is required")
	case c.Syncer == nil:
		return errors.New("PoolConfig.Syncer is required")
	case c.Mirror == nil:
		return errors.New("PoolConfig.Mirror is required")
	case c.FetchConcurrency < 1:
		return fmt.Errorf("PoolConfig.FetchConcurrency must be ≥ 1, got %d", c.FetchConcurrency)
	case c.BatchSize < 1:
		return fmt.Errorf("PoolConfig.BatchSize must be ≥ 1, got %d", c.BatchSize)
	case c.CommitDelay < 0:
		return fmt.Errorf("PoolConfig.CommitDelay must be ≥ 0, got %v", c.CommitDelay)
	case c.PullWait < 0:
		return fmt.Errorf("PoolConfig.PullWait must be > 0, got %v", c.PullWait)
	case c.MaxAttempts < 1:
		return fmt.Errorf("PoolConfig.MaxAttempts must be ≥ 1, got %d", c.MaxAttempts)
	case c.RetryDelay < 0:
		return fmt.Errorf("PoolConfig.RetryDelay must be > 0, got %v", c.RetryDelay)
	case c.ExtendInterval < 0:
		return fmt.Errorf("PoolConfig.ExtendInterval must be > 0, got %v", c.ExtendInterval)
	case c.PendingInterval < 0:
		return fmt.Errorf("PoolConfig.PendingInterval must be > 0, got %v", c.PendingInterval)
	case c.DrainTimeout < 0:
		return fmt.Errorf("PoolConfig.DrainTimeout must be > 0, got %v", c.DrainTimeout)
	}
	for i, d := range c.UnresolvedRetryDelays {
		if d <= 0 {
			return fmt.Errorf("PoolConfig.UnresolvedRetryDelays[%d] must be > 0, got %v", i, d)
		}
	}
	return nil
}

// Pool consumes queued events and mirrors the orders they announce.
type Pool struct {
	cfg     PoolConfig
	syncer  *Syncer
	mirror  ordersync.Mirror
	log     *slog.Logger
	now     func() time.Time
	metrics *poolMetrics
	codes   *codeCache

	// codesResolver is the mirror when it resolves order ids in batches.
	codesResolver ordersync.OrderCodesResolver

	mu      sync.Mutex
	flights map[orderKey]*flight

	// room bounds the deliveries held at once: a pull takes BatchSize
	// slots, gives back what it did not use, and every settled delivery
	// gives back one.
	room *semaphore.Weighted
	// slots bounds the fetches running at once (yieldLoop moves it).
	slots *fetchSlots
	// unsettled counts deliveries not settled yet; the drain waits for it.
	unsettled sync.WaitGroup

	jobs    chan job
	commits chan commitItem
	known   chan ordersync.OrderRef
}

// orderKey identifies an order for coalescing.
type orderKey struct{ account, code string }

// item is one delivery on its way through the pool.
type item struct {
	d        ordersync.Delivery
	ev       *ordersync.InboundEvent
	e        *ordersync.Event // nil when the body is malformed
	account  string
	code     string
	pulledAt time.Time
}

// round is one fetch of an order and the deliveries it answers.
type round struct {
	key   orderKey
	items []*item
	// started is set, under Pool.mu, when the fetch is about to be sent;
	// deliveries for the order then wait for the next round.
	started bool
}

// flight is the coalescing state of an order with a round planned or
// running.
type flight struct {
	cur  *round
	next []*item // arrived while cur was running: the one follow-up round
}

// job is work for the fetch goroutines: a round to fetch, an event to
// resolve, or a dead letter to record.
type job struct {
	round   *round
	resolve *item
	dead    *item
	reason  ordersync.DeadLetterReason
	err     error
}

// commitItem is a fetched order with its deliveries, or an ignored event to
// log, on its way to the group commit.
type commitItem struct {
	params  ordersync.ApplyParams
	items   []*item
	ignored *item
}

// NewPool returns a Pool; call Run.
func NewPool(cfg PoolConfig) (*Pool, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new worker pool: register metrics: %w", err)
	}
	m, err := newPoolMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new worker pool: %w", err)
	}
	p := &Pool{
		cfg:     cfg,
		syncer:  cfg.Syncer,
		mirror:  cfg.Mirror,
		log:     cfg.Logger,
		now:     cfg.Clock,
		metrics: m,
		codes:   newCodeCache(codeCacheSize),
		flights: make(map[orderKey]*flight),
		room:    semaphore.NewWeighted(int64(3*cfg.BatchSize + cfg.FetchConcurrency)),
		slots:   newFetchSlots(cfg.FetchConcurrency),
	}
	m.fetchLimit.Set(float64(cfg.FetchConcurrency))
	p.codesResolver, _ = cfg.Mirror.(ordersync.OrderCodesResolver)
	return p, nil
}

// RecordDrift counts a drift of the given kind, for stages that find drift
// outside the pool (the reconciler's missed webhooks).
func (p *Pool) RecordDrift(kind string) { p.syncer.RecordDrift(kind) }

// Run pulls and processes events until ctx is cancelled, then drains: it
// stops pulling, lets running fetches and commits finish (cancelling them
// after DrainTimeout), settles every delivery it holds and returns. A Pool
// runs once.
func (p *Pool) Run(ctx context.Context) error {
	p.jobs = make(chan job, p.cfg.FetchConcurrency)
	p.commits = make(chan commitItem, 2*p.cfg.BatchSize)
	p.known = make(chan ordersync.OrderRef, 1024)

	// Work outlives ctx so the drain can finish what was started.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	auxCtx, cancelAux := context.WithCancel(ctx)
	defer cancelAux()

	var workers, committer, aux sync.WaitGroup
	for range p.cfg.FetchConcurrency {
		workers.Go(func() { p.work(workCtx) })
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
	workers.Wait()
	close(p.commits)
	committer.Wait()
	cancelAux()
	close(p.known)
	aux.Wait()
	return nil
}

// pull feeds deliveries into the pool until ctx ends.
func (p *Pool) pull(ctx context.Context) {
	batch := int64(p.cfg.BatchSize)
	failing := false
	for {
		if err := p.room.Acquire(ctx, batch); err != nil {
			return
		}
		ds, err := p.cfg.Source.Next(ctx, p.cfg.BatchSize, p.cfg.PullWait)
		p.room.Release(batch - int64(len(ds)))
		p.unsettled.Add(len(ds))
		now := p.now()
		var unresolved []*item
		for _, d := range ds {
			if it := p.dispatch(d, now); it != nil {
				unresolved = append(unresolved, it)
			}
		}
		p.resolveBatch(ctx, unresolved)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				p.log.Error("pull events from the queue failed; retrying", "err", err)
				failing = true
			}
			if sleep(ctx, p.cfg.RetryDelay) != nil {
				return
			}
		case failing:
			p.log.Info("pulling events from the queue again")
			failing = false
		}
	}
}

// dispatch routes a fresh delivery. It runs on the pull goroutine and does
// no I/O: anything that needs the mirror goes to the fetch goroutines, except
// the events it returns, which carry an order id but no code the pool knows:
// the caller resolves them with resolveBatch.
func (p *Pool) dispatch(d ordersync.Delivery, now time.Time) *item {
	ev := d.Event()
	it := &item{d: d, ev: ev, account: ev.Account, pulledAt: now}
	if it.account == "" {
		it.account = ordersync.DefaultAccount
	}
	e, err := ordersync.ParseEvent(ev.Body)
	if err != nil {
		p.jobs <- job{dead: it, reason: ordersync.ReasonMalformed, err: err}
		return nil
	}
	it.e = e
	if ev.Ignored != "" {
		p.commits <- commitItem{ignored: it}
		return nil
	}
	if reason, ignored := e.Ignored(); ignored {
		ev.Ignored = reason
		p.commits <- commitItem{ignored: it}
		return nil
	}
	it.code = e.OrderCode
	if it.code == "" {
		it.code, _ = p.codes.get(it.account, e.OrderID)
	}
	switch {
	case it.code == "" && e.OrderID != "" && p.codesResolver != nil:
		return it
	case it.code == "":
		p.jobs <- job{resolve: it}
		return nil
	}
	if r := p.attach(it); r != nil {
		p.jobs <- job{round: r}
	}
	return nil
}

// resolveBatch finds the codes of a pull's events that carry only an order
// id with one read of the mirror per account, on the pull goroutine, instead
// of one read per event on the fetch goroutines. What it does not find, or
// cannot look up, takes the path of one event: resolve, with its fallback
// to the order reference and its retry schedule.
func (p *Pool) resolveBatch(ctx context.Context, items []*item) {
	byAccount := map[string][]*item{}
	for _, it := range items {
		byAccount[it.account] = append(byAccount[it.account], it)
	}
	for account, its := range byAccount {
		ids := make([]ordersync.ID, len(its))
		for i, it := range its {
			ids[i] = it.e.OrderID
		}
		codes, err := p.codesResolver.ResolveOrderCodes(ctx, account, ids)
		if err != nil && ctx.Err() == nil {
			p.log.Warn("resolve a batch of order ids failed; resolving them one by one", "events", len(its), "err", err)
		}
		for _, it := range its {
			code := codes[it.e.OrderID] // a nil map on error: every event resolves alone
			if code == "" {
				p.jobs <- job{resolve: it}
				continue
			}
			p.codes.put(account, it.e.OrderID, code)
			it.code = code
			if r := p.attach(it); r != nil {
				p.jobs <- job{round: r}
			}
		}
	}
}

// attach joins it to its order's planned round, or to the follow-up round
// when a fetch is already running, or plans a new round, which the caller
// must run.
func (p *Pool) attach(it *item) *round {
	key := orderKey{it.account, it.code}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.flights[key]
	if !ok {
		r := &round{key: key, items: []*item{it}}
		p.flights[key] = &flight{cur: r}
		return r
	}
	// Counted as coalesced: every event that does not cost a fetch of its
	// own. The first event of a follow-up round does.
	if !f.cur.started {
		f.cur.items = append(f.cur.items, it)
		p.metrics.coalesced.Inc()
	} else {
		if len(f.next) > 0 {
			p.metrics.coalesced.Inc()
		}
		f.next = append(f.next, it)
	}
	return nil
}

// startRound marks r as sent: later events for its order wait for the
// follow-up round.
func (p *Pool) startRound(r *round) {
	p.mu.Lock()
	r.started = true
	p.mu.Unlock()
}

// finishRound ends r's fetch and returns the follow-up round for the events
// that arrived meanwhile, or nil.
func (p *Pool) finishRound(r *round) *round {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.flights[r.key]
	if len(f.next) == 0 {
		delete(p.flights, r.key)
		return nil
	}
	nr := &round{key: r.key, items: f.next, started: true}
	f.cur, f.next = nr, nil
	return nr
}

// work runs jobs until the pool closes them.
func (p *Pool) work(ctx context.Context) {
	for j := range p.jobs {
		// Once ctx ends (a drain that timed out), jobs run without a slot
		// and fail fast; their deliveries go back to the queue.
		acquired := p.slots.acquire(ctx) == nil
		p.do(ctx, j)
		if acquired {
			p.slots.release()
		}
	}
}

// do runs one job.
func (p *Pool) do(ctx context.Context, j job) {
	switch {
	case j.round != nil:
		p.startRound(j.round)
		p.runRounds(ctx, j.round)
	case j.resolve != nil:
		if r := p.resolve(ctx, j.resolve); r != nil {
			p.startRound(r)
			p.runRounds(ctx, r)
		}
	case j.dead != nil:
		p.deadLetter(ctx, j.dead, j.reason, j.err)
	}
}

// resolve finds the order code of an event that carries none and attaches
// the event; it returns a round the caller must run.
func (p *Pool) resolve(ctx context.Context, it *item) *round {
	code, err := p.mirror.ResolveOrderCode(ctx, it.e.Ref(it.account))
	switch {
	case errors.Is(err, ordersync.ErrNotFound):
		attempt := it.d.Attempt()
		if attempt <= len(p.cfg.UnresolvedRetryDelays) {
			p.retry(it, p.cfg.UnresolvedRetryDelays[max(attempt, 1)-1])
			return nil
		}
		p.deadLetter(ctx, it, ordersync.ReasonUnresolved,
			fmt.Errorf("resolve order of event: no order known for id %q or reference %q after %d attempts", it.e.OrderID, it.e.OrderReference, attempt))
		return nil
	case err != nil:
		p.log.Warn("resolve order code failed; event will be retried", "msg_id", it.ev.MsgID, "err", err)
		p.retry(it, p.jittered(p.cfg.RetryDelay))
		return nil
	}
	p.codes.put(it.account, it.e.OrderID, code)
	it.code = code
	return p.attach(it)
}

// runRounds fetches r, hands the result to the committer, and goes on with
// the follow-up round as long as events keep arriving during the fetch.
func (p *Pool) runRounds(ctx context.Context, r *round) {
	for r != nil {
		order, seq, err := p.fetch(ctx, r.key.account, r.key.code)
		if err != nil {
			p.fetchFailed(ctx, r.items, err)
		} else {
			p.codes.put(r.key.account, order.OrderID, order.OrderCode)
			p.observeDrift(r, order.OrderStatus)
			p.commits <- commitItem{
				params: ordersync.ApplyParams{
					Account: r.key.account, Order: order, Seq: seq, FetchedAt: p.now(),
					Cause: causeOf(r.items), Events: eventRecords(r.items, r.key.code),
				},
				items: r.items,
			}
		}
		r = p.finishRound(r)
	}
}

// fetch fetches through the account's Syncer.
func (p *Pool) fetch(ctx context.Context, account, code string) (*ordersync.Order, int64, error) {
	if p.cfg.Accounts == nil {
		return p.syncer.Fetch(ctx, account, code)
	}
	s, err := p.cfg.Accounts.Syncer(account)
	if err != nil {
		return nil, 0, err
	}
	return s.Fetch(ctx, account, code)
}

// syncerFor is the account's Syncer, or the pool's own for an account it
// does not know (whose events never reach the upstream).
func (p *Pool) syncerFor(account string) *Syncer {
	if s, err := p.cfg.Accounts.Syncer(account); err == nil {
		return s
	}
	return p.syncer
}

// observeDrift counts events that announced a status the order does not
// have.
func (p *Pool) observeDrift(r *round, status ordersync.Status) {
	for _, it := range r.items {
		if implied, ok := it.e.Type.ImpliedStatus(); ok && implied != status {
			p.syncer.RecordDrift(driftStatusMismatch)
			p.log.Debug("event announced a status the order does not have",
				"msg_id", it.ev.MsgID, "order_code", r.key.code, "event_type", it.e.Type, "announced", implied, "fetched", status)
		}
	}
}

// fetchFailed settles the deliveries of a failed fetch: a dead letter for a
// permanent failure, a redelivery later for everything else.
func (p *Pool) fetchFailed(ctx context.Context, items []*item, err error) {
	switch {
	case IsPermanent(err):
		reason := deadLetterReason(err)
		for _, it := range items {
			p.deadLetter(ctx, it, reason, err)
		}
	case IsOutage(err) || isTransient(err):
		delay := OutageWait(err)
		if delay <= 0 {
			delay = p.cfg.RetryDelay
		}
		s := p.syncerFor(items[0].account)
		upstreamUsable := s.BreakerClosed() && !s.CredentialsPaused()
		for _, it := range items {
			if upstreamUsable && it.d.Attempt() >= p.cfg.MaxAttempts {
				p.deadLetter(ctx, it, ordersync.ReasonRetriesExhausted, err)
				continue
			}
			p.retry(it, p.jittered(delay))
		}
	default:
		// The mirror failed to hand out a sequence, or the drain ran out of
		// time: nothing is known about the order.
		if ctx.Err() == nil {
			p.log.Warn("fetch failed; events will be retried", "events", len(items), "err", err)
		}
		for _, it := range items {
			p.retry(it, p.jittered(p.cfg.RetryDelay))
		}
	}
}

// commitLoop groups fetched orders into mirror transactions: a batch is
// written when it holds BatchSize orders or its first one has waited
// CommitDelay.
func (p *Pool) commitLoop(ctx context.Context) {
	var batch []commitItem
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		if len(batch) == 0 {
			ci, ok := <-p.commits
			if !ok {
				return
			}
			batch = append(batch, ci)
			t.Reset(p.cfg.CommitDelay)
		}
		for len(batch) < p.cfg.BatchSize {
			select {
			case ci, ok := <-p.commits:
				if !ok {
					p.commit(ctx, batch)
					return
				}
				batch = append(batch, ci)
				continue
			case <-t.C:
			}
			break
		}
		t.Stop()
		p.commit(ctx, batch)
		clear(batch)
		batch = batch[:0]
	}
}

// commit writes one batch and then, never before, acknowledges its
// deliveries.
func (p *Pool) commit(ctx context.Context, batch []commitItem) {
	var (
		params  []ordersync.ApplyParams
		applied []commitItem
		ignored []*item
	)
	for _, ci := range batch {
		if ci.ignored != nil {
			ignored = append(ignored, ci.ignored)
			continue
		}
		params = append(params, ci.params)
		applied = append(applied, ci)
	}
	if len(params) > 0 {
		results, err := p.syncer.apply(ctx, params)
		if err != nil {
			p.log.Error("mirror commit failed; its events will be retried", "orders", len(params), "err", err)
			for _, ci := range applied {
				for _, it := range ci.items {
					p.retry(it, p.jittered(p.cfg.RetryDelay))
				}
			}
		} else {
			p.afterApply(ctx, applied, results)
		}
	}
	if len(ignored) > 0 {
		if err := p.mirror.RecordEvents(ctx, ignoredRecords(ignored)); err != nil {
			p.log.Error("log ignored events failed; they will be retried", "events", len(ignored), "err", err)
			for _, it := range ignored {
				p.retry(it, p.jittered(p.cfg.RetryDelay))
			}
		} else {
			for _, it := range ignored {
				p.ack(it)
			}
		}
	}
}

// afterApply does what follows a committed batch: metrics, hooks, acks.
func (p *Pool) afterApply(ctx context.Context, applied []commitItem, results []ordersync.ApplyResult) {
	now := p.now()
	for i, ci := range applied {
		r := results[i]
		if r.Applied && !r.Created && r.PreviousStatus != r.Status && hasCause(ci.items, ordersync.CauseReconcile) {
			p.syncer.RecordDrift(driftMissedWebhook)
			p.log.Info("reconcile found a status change no webhook announced",
				"order_code", ci.params.Order.OrderCode, "from", r.PreviousStatus, "to", r.Status)
		}
		if r.Created && p.cfg.OnOrdersKnown != nil {
			o := ci.params.Order
			ref := ordersync.OrderRef{Account: ci.params.Account, Code: o.OrderCode, ID: o.OrderID, Reference: o.OrderReference}
			select {
			case p.known <- ref:
			case <-ctx.Done():
			}
		}
		for _, it := range ci.items {
			if !it.ev.ReceivedAt.IsZero() {
				p.metrics.syncLag.Observe(now.Sub(it.ev.ReceivedAt).Seconds())
			}
		}
	}
	if p.cfg.OnApplied != nil {
		p.cfg.OnApplied(results)
	}
	for _, ci := range applied {
		for _, it := range ci.items {
			p.ack(it)
		}
	}
}

// deadLetter records a permanent failure and terminates the delivery. If
// the dead letter cannot be written, the delivery is retried instead: the
// event must stay somewhere.
func (p *Pool) deadLetter(ctx context.Context, it *item, reason ordersync.DeadLetterReason, cause error) {
	dl := ordersync.DeadLetter{
		MsgID:     it.ev.MsgID,
		Account:   it.account,
		Reason:    reason,
		Attempts:  it.d.Attempt(),
		LastError: cause.Error(),
		OrderCode: it.code,
		Body:      it.ev.Body,
		Headers:   eventHeaders(it.ev),
		CreatedAt: p.now(),
	}
	if it.e != nil {
		dl.OrderID, dl.OrderReference = it.e.OrderID, it.e.OrderReference
	}
	if _, err := p.mirror.AddDeadLetter(ctx, dl); err != nil {
		p.log.Error("record dead letter failed; event will be retried", "msg_id", it.ev.MsgID, "reason", reason, "err", err)
		p.retry(it, p.jittered(p.cfg.RetryDelay))
		return
	}
	p.metrics.deadLetters.WithLabelValues(string(reason)).Inc()
	p.log.Warn("event dead-lettered", "msg_id", it.ev.MsgID, "reason", reason,
		"order_id", dl.OrderID, "order_code", dl.OrderCode, "attempts", dl.Attempts, "err", cause)
	if err := it.d.Term(); err != nil {
		p.log.Warn("terminate dead-lettered event failed; it may be delivered again", "msg_id", it.ev.MsgID, "err", err)
	}
	p.settled()
}

func (p *Pool) ack(it *item) {
	// Acknowledging what is committed must not depend on the drain's
	// context: the commit happened.
	if err := it.d.Ack(context.Background()); err != nil {
		p.log.Warn("ack event failed; it will be redelivered and applied again harmlessly", "msg_id", it.ev.MsgID, "err", err)
	}
	p.settled()
}

func (p *Pool) retry(it *item, delay time.Duration) {
	if err := it.d.Retry(delay); err != nil {
		p.log.Warn("retry event failed; it will be redelivered after the ack wait", "msg_id", it.ev.MsgID, "err", err)
	}
	p.settled()
}

func (p *Pool) settled() {
	p.room.Release(1)
	p.unsettled.Done()
}

// jittered spreads redeliveries over [d, 1.25d) so they do not return as
// one herd.
func (p *Pool) jittered(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/4+1))
}

// extendLoop tells the queue that events held longer than ExtendInterval
// are still being worked on.
func (p *Pool) extendLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.ExtendInterval)
	defer t.Stop()
	var held []*item
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cutoff := p.now().Add(-p.cfg.ExtendInterval)
		held = held[:0]
		p.mu.Lock()
		for _, f := range p.flights {
			for _, its := range [][]*item{f.cur.items, f.next} {
				for _, it := range its {
					if it.pulledAt.Before(cutoff) {
						held = append(held, it)
					}
				}
			}
		}
		p.mu.Unlock()
		for _, it := range held {
			if err := it.d.Extend(); err != nil {
				p.log.Debug("extend event failed", "msg_id", it.ev.MsgID, "err", err)
			}
		}
	}
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

// knownLoop calls OnOrdersKnown off the commit path, with every order that
// became known since its previous call (at most knownBatch).
func (p *Pool) knownLoop(ctx context.Context) {
	batch.Drain(p.known, knownBatch, func(refs []ordersync.OrderRef) { p.cfg.OnOrdersKnown(ctx, refs) })
}

// causeOf is why a round's fetch happened: a webhook, unless every event
// had another cause.
func causeOf(items []*item) ordersync.Cause {
	cause := items[0].ev.Cause
	for _, it := range items {
		if it.ev.Cause == "" || it.ev.Cause == ordersync.CauseWebhook {
			return ordersync.CauseWebhook
		}
	}
	return cause
}

func hasCause(items []*item, c ordersync.Cause) bool {
	return slices.ContainsFunc(items, func(it *item) bool { return it.ev.Cause == c })
}

// eventRecords are the event log rows of a round's events, in order of
// receipt, so the last one becomes the order's last event.
func eventRecords(items []*item, code string) []ordersync.EventRecord {
	recs := make([]ordersync.EventRecord, len(items))
	for i, it := range items {
		recs[i] = eventRecord(it, ordersync.OutcomeSynced)
		recs[i].OrderCode = code
	}
	slices.SortStableFunc(recs, func(a, b ordersync.EventRecord) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	return recs
}

func ignoredRecords(items []*item) []ordersync.EventRecord {
	recs := make([]ordersync.EventRecord, len(items))
	for i, it := range items {
		recs[i] = eventRecord(it, ordersync.OutcomeIgnored)
		recs[i].Detail = string(it.ev.Ignored)
	}
	return recs
}

func eventRecord(it *item, outcome ordersync.EventOutcome) ordersync.EventRecord {
	rec := ordersync.EventRecord{
		MsgID:      it.ev.MsgID,
		Account:    it.account,
		ReceivedAt: it.ev.ReceivedAt,
		Signature:  it.ev.Signature,
		Outcome:    outcome,
		OrderCode:  it.code,
	}
	if rec.ReceivedAt.IsZero() {
		rec.ReceivedAt = it.pulledAt
	}
	if it.e != nil {
		rec.Type, rec.OrderType = it.e.Type, it.e.OrderType
		rec.OrderID, rec.OrderReference = it.e.OrderID, it.e.OrderReference
		if rec.OrderCode == "" {
			rec.OrderCode = it.e.OrderCode
		}
	}
	return rec
}

// eventHeaders keeps what the receiver knew about an event alongside its
// dead letter.
func eventHeaders(ev *ordersync.InboundEvent) map[string]string {
	h := map[string]string{"signature": string(ev.Signature)}
	if !ev.ReceivedAt.IsZero() {
		h["received_at"] = ev.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	if ev.Cause != "" {
		h["cause"] = string(ev.Cause)
	}
	if ev.ReplayOf != 0 {
		h["replay_of"] = fmt.Sprint(ev.ReplayOf)
	}
	return h
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
