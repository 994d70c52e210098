package worker

// Pulling queued events and coalescing them per order: one round of
// fetching answers every queued event for an order that arrived before it
// started.

import (
	"context"
	"time"

	"github.com/ordersync/ordersync"
)

// orderKey identifies an order for coalescing.
type orderKey struct{ account, code string }

// item is one queued event on its way through the pool.
type item struct {
	qe       ordersync.QueuedEvent
	ev       *ordersync.InboundEvent
	e        *ordersync.Event // nil when the body is malformed
	account  string
	code     string
	pulledAt time.Time
	// last is the order's last applied fetch as the mirror held it when the
	// event was pulled (readLastFetches), nil when it held none or was
	// not asked: a webhook received before it needs no fetch of its own.
	last *ordersync.LastFetch
}

// round is one fetch of an order and the queued events it answers.
type round struct {
	key   orderKey
	items []*item
	// started is set, under Pool.mu, when the fetch's request is about to
	// leave (past the rate limit and every other wait: see fetchOptions.leaving), or
	// when the fetch ended without sending one; queued events for the order
	// then wait for the next round. Until then a queued event joins this round:
	// the answer to a request not yet sent includes its change.
	started bool
}

// flight is the coalescing state of an order with a round planned or
// running.
type flight struct {
	cur  *round
	next []*item // arrived while cur was running: the one follow-up round
}

// pull feeds queued events into the pool until ctx ends.
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
		if len(ds) > 0 {
			select {
			case p.pulled <- struct{}{}:
			default:
			}
		}
		now := p.now()
		var unresolved, ready []*item
		for _, d := range ds {
			switch it := p.dispatch(d, now); {
			case it == nil:
			case it.code == "":
				unresolved = append(unresolved, it)
			default:
				ready = append(ready, it)
			}
		}
		ready = append(ready, p.resolveBatch(ctx, unresolved)...)
		p.readLastFetches(ctx, ready)
		for _, it := range ready {
			if r := p.attach(it); r != nil {
				p.jobs <- job{round: r}
			}
		}
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

// dispatch routes a fresh queued event. It runs on the pull goroutine and does
// no I/O: anything that needs the mirror goes to the fetch goroutines, except
// the events it returns, which the caller attaches to their orders' rounds
// after reading the mirror once for the whole pull: those with a code, and
// those that carry an order id but no code the pool knows, which it
// resolves with resolveBatch.
func (p *Pool) dispatch(qe ordersync.QueuedEvent, now time.Time) *item {
	ev := qe.Event()
	it := &item{qe: qe, ev: ev, account: ev.Account, pulledAt: now}
	// The receiver's parse travels with the event; only events queued
	// without it (by an earlier release, replays) are parsed here.
	e := ev.Event
	if e == nil {
		var err error
		if e, err = ordersync.ParseEvent(ev.Body); err != nil {
			p.jobs <- job{dead: it, reason: ordersync.ReasonMalformed, err: err}
			return nil
		}
	}
	it.e = e
	// The receiver decided whether the event is ignored and said so in
	// the event (every release has): it is not decided again here.
	if ev.Ignored != "" {
		p.commits <- commitItem{ignored: it}
		return nil
	}
	it.code = e.OrderCode
	if it.code == "" {
		it.code, _ = p.codes.get(it.account, e.OrderID)
	}
	if it.code == "" && e.OrderID == "" {
		p.jobs <- job{resolve: it}
		return nil
	}
	return it
}

// resolveBatch finds the codes of a pull's events that carry only an order
// id with one read of the mirror per account, on the pull goroutine, instead
// of one read per event on the fetch goroutines, and returns the events it
// resolved. What it does not find, or cannot look up, takes the path of one
// event: resolve, with its fallback to the order reference and its retry
// schedule.
func (p *Pool) resolveBatch(ctx context.Context, items []*item) (resolved []*item) {
	byAccount := map[string][]*item{}
	for _, it := range items {
		byAccount[it.account] = append(byAccount[it.account], it)
	}
	for account, its := range byAccount {
		ids := make([]ordersync.ID, len(its))
		for i, it := range its {
			ids[i] = it.e.OrderID
		}
		codes, err := p.mirror.ResolveOrderCodes(ctx, account, ids)
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
			resolved = append(resolved, it)
		}
	}
	return resolved
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
	nr := &round{key: r.key, items: f.next}
	f.cur, f.next = nr, nil
	return nr
}
