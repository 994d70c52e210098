package worker

// The fetch goroutines: resolve an event to its order, fetch the order
// round after round, and turn a failed fetch into a retry or a dead letter.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/retry"
	"github.com/ordersync/ordersync/internal/tracing"
)

// job is work for the fetch goroutines: a round to fetch, an event to
// resolve, or a dead letter to record.
type job struct {
	round   *round
	resolve *item
	dead    *item
	reason  ordersync.DeadLetterReason
	err     error
}

// work runs jobs until the pool closes them. Each job holds a fetch slot
// while it runs, except while its fetch waits for its account's upstream
// (parked): then the slot and this goroutine's place go to a new worker,
// and this one ends with its job.
func (p *Pool) work(ctx context.Context) {
	for j := range p.jobs {
		f := &fetcher{pool: p, workCtx: ctx}
		// Once ctx ends (a drain that timed out), jobs run without a slot
		// and fail fast; their queued events go back to the queue.
		f.held = p.slots.acquire(ctx) == nil
		p.do(ctx, j, f)
		if f.held {
			p.slots.release()
		}
		if f.parked {
			return
		}
	}
}

// fetcher is one job's hold on the pool's fetch slots.
type fetcher struct {
	pool    *Pool
	workCtx context.Context
	held    bool
	// parked: a worker took this goroutine's place when it first parked.
	parked bool
}

// park runs wait, the wait of a fetch at its account's Retry-After gate or
// rate limit, without holding a fetch slot or a worker, so that one
// account's upstream holding its fetches back does not hold back the
// other accounts' fetches queued behind them; it takes a slot again
// before the fetch goes on.
func (f *fetcher) park(ctx context.Context, wait func(context.Context) error) error {
	if !f.parked {
		f.parked = true
		f.pool.workers.Go(func() { f.pool.work(f.workCtx) })
	}
	if f.held {
		f.pool.slots.release()
		f.held = false
	}
	err := wait(ctx)
	f.held = f.pool.slots.acquire(ctx) == nil
	return err
}

// do runs one job.
func (p *Pool) do(ctx context.Context, j job, f *fetcher) {
	switch {
	case j.round != nil:
		p.runRounds(ctx, j.round, f)
	case j.resolve != nil:
		if r := p.resolve(ctx, j.resolve); r != nil {
			p.runRounds(ctx, r, f)
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
		attempt := it.qe.Attempt()
		p.settleFailed(ctx, it, p.unresolved, retry.Failure{Kind: retry.Transient},
			fmt.Errorf("resolve order of event: no order known for id %q or reference %q after %d attempts", it.e.OrderID, it.e.OrderReference, attempt))
		return nil
	case err != nil:
		p.log.Warn("resolve order code failed; event will be retried", "msg_id", it.ev.MsgID, "err", err)
		p.retryLater(it)
		return nil
	}
	p.codes.put(it.account, it.e.OrderID, code)
	it.code = code
	p.readLastFetches(ctx, []*item{it})
	return p.attach(it)
}

// runRounds fetches r, hands the result to the committer, and goes on with
// the follow-up round as long as events keep arriving during the fetch. A
// round takes events until its request leaves, so a fetch waiting at the
// rate limit or the Retry-After gate answers the events that arrive
// meanwhile instead of leaving them a request of their own.
func (p *Pool) runRounds(ctx context.Context, r *round, f *fetcher) {
	for r != nil {
		if p.skipAnswered(ctx, r) {
			r = p.finishRound(r)
			continue
		}
		cur := r
		_, span := p.cfg.Tracer.Start(ctx, tracing.SpanFetch, roundTrace(r.items))
		res, err := p.fetch(ctx, r.key.account, r.key.code, fetchOptions{park: f.park, leaving: func() { p.startRound(cur) }})
		span.End(err)
		// A fetch that failed before sending anything closes its round
		// too, so that its items are settled as they stand.
		p.startRound(r)
		if err != nil {
			p.fetchFailed(ctx, r.items, err)
		} else {
			p.codes.put(r.key.account, res.order.OrderID, res.order.OrderCode)
			p.observeDrift(r, res.order.OrderStatus)
			p.commits <- commitItem{
				params: ordersync.ApplyParams{
					Account: r.key.account, Order: res.order, Seq: res.seq, FetchedAt: res.sent,
					Cause: causeOf(r.items), Events: eventRecords(r.items, r.key.code),
				},
				items: r.items, trace: span.TraceParent(),
			}
		}
		r = p.finishRound(r)
	}
}

// fetch fetches through the account's Syncer.
func (p *Pool) fetch(ctx context.Context, account, code string, opts fetchOptions) (fetched, error) {
	s := p.syncer
	if p.cfg.Accounts != nil {
		var err error
		if s, err = p.cfg.Accounts.For(account); err != nil {
			return fetched{}, err
		}
	}
	return s.fetch(ctx, code, opts)
}

// syncerFor is the account's Syncer, or the pool's own for an account it
// does not know (whose events never reach the upstream).
func (p *Pool) syncerFor(account string) *Syncer {
	if s, err := p.cfg.Accounts.For(account); err == nil {
		return s
	}
	return p.syncer
}

// observeDrift counts events that announced a status the order does not
// have.
func (p *Pool) observeDrift(r *round, status ordersync.Status) {
	for _, it := range r.items {
		if implied, ok := it.e.Type.ImpliedStatus(); ok && implied != status {
			p.syncerFor(r.key.account).RecordDrift(driftStatusMismatch)
			p.log.Debug("event announced a status the order does not have",
				"msg_id", it.ev.MsgID, "order_code", r.key.code, "event_type", it.e.Type, "announced", implied, "fetched", status)
		}
	}
}

// fetchFailed settles the queued events of a failed fetch as the pool's retry
// policy decides: a dead letter for a permanent failure, a redelivery
// later for everything else, until a transient one runs out of attempts.
func (p *Pool) fetchFailed(ctx context.Context, items []*item, err error) {
	f, upstream := p.fetchFailure(items[0].account, err)
	if !upstream && ctx.Err() == nil {
		p.quiet.Log(slog.LevelWarn, "fetch", "fetch failed; events will be retried", "events", len(items), "err", err)
	}
	for _, it := range items {
		p.settleFailed(ctx, it, p.retries, f, err)
	}
}

// fetchFailure says what a failed fetch of the account's order means for
// its retries, and whether the upstream answered for it. Which outages
// never use up the attempts is the pool's own decision: an open breaker or
// paused credentials say nothing about the order, so its events wait for
// the upstream however long it takes. A fetch refused for either is an
// outage by its cause, even when the state changed since: a probe may
// resume fetching while the refused fetches are still being settled.
func (p *Pool) fetchFailure(account string, err error) (retry.Failure, bool) {
	switch {
	case IsPermanent(err):
		return retry.Failure{Kind: retry.Permanent, Reason: string(deadLetterReason(err))}, true
	case errors.Is(err, ErrCredentialsRejected) || errors.Is(err, ErrBreakerOpen):
		return retry.Failure{Kind: retry.Outage, Wait: OutageWait(err)}, true
	case IsOutage(err) || isTransient(err):
		s := p.syncerFor(account)
		if s.BreakerClosed() && !s.CredentialsPaused() {
			return retry.Failure{Kind: retry.Transient, Wait: OutageWait(err)}, true
		}
		return retry.Failure{Kind: retry.Outage, Wait: OutageWait(err)}, true
	}
	// The mirror failed to hand out a sequence, or the drain ran out of
	// time: nothing is known about the order.
	return retry.Failure{Kind: retry.Outage}, false
}
