package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/retry"
)

// pullWait is how long a pull waits for an event while the runner holds
// none: a long poll, which returns on the first event.
const pullWait = 30 * time.Second

// runner delivers one endpoint's events.
type runner struct {
	d      *Dispatcher
	ep     atomic.Pointer[ordersync.Endpoint]
	src    ordersync.OrderEventSource
	log    *logWriter
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	client *http.Client

	// stoppedBy is when the runner before this one stopped (see Resume);
	// after is closed when it no longer reads (nil: there was none here).
	stoppedBy time.Time
	after     <-chan struct{}
	// reading is closed when this one no longer reads.
	reading chan struct{}

	lanes *lanes

	mu      sync.Mutex
	limit   *rate.Limiter // nil: no rate cap
	limitAt float64       // the rate limit was made for
}

func (d *Dispatcher) start(ctx context.Context, ep *ordersync.Endpoint, src ordersync.OrderEventSource, log *logWriter, stoppedBy time.Time, after <-chan struct{}) *runner {
	rctx, cancel := context.WithCancel(ctx)
	r := &runner{d: d, src: src, log: log, stoppedBy: stoppedBy, after: after, reading: make(chan struct{}), ctx: rctx, cancel: cancel,
		sem: make(chan struct{}, d.cfg.Concurrency), lanes: newLanes(), client: d.cfg.Client}
	if d.ownClients {
		r.client = newClient(d.cfg.Concurrency, d.cfg.Timeout)
	}
	r.ep.Store(ep)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		r.run()
	}()
	return r
}

func (r *runner) endpoint() *ordersync.Endpoint { return r.ep.Load() }

func (r *runner) run() {
	id := r.endpoint().ID
	log := r.d.cfg.Logger.With("endpoint", id)
	gauge := r.d.metrics.oldest.WithLabelValues(id)
	defer gauge.Set(0)
	defer close(r.reading)
	if r.d.ownClients {
		defer r.client.CloseIdleConnections()
	}
	// The runner before this one reads no more: a pull of its still open
	// would take an event this one's Resume does not wait for.
	if r.after != nil {
		select {
		case <-r.after:
		case <-r.ctx.Done():
			return
		}
	}
	// An order's earlier event another runner left unsettled must not be
	// overtaken by its later one.
	if err := r.src.Resume(r.ctx, r.stoppedBy); err != nil {
		return
	}
	extended := time.Now()
	// The loop ends in Next: once ctx has ended, Next releases what the
	// source still holds.
	for {
		room, freed := r.lanes.room(r.d.cfg.MaxHeld)
		oldest := r.lanes.oldest()
		var extend []*held
		// Well within the consumer's ack wait.
		if time.Since(extended) >= r.d.cfg.AckWait/3 {
			extended = time.Now()
			extend = r.lanes.all()
		}
		// Every event held, the one being retried and those waiting behind
		// it in their lanes, stays ours: one whose ack wait ran out would be
		// handed out again, to this process or another, out of its order.
		for _, h := range extend {
			_ = h.qe.Extend()
		}
		if oldest.IsZero() {
			gauge.Set(0)
		} else {
			gauge.Set(time.Since(oldest).Seconds())
		}
		if room <= 0 {
			select {
			case <-freed:
			case <-time.After(time.Second):
			case <-r.ctx.Done():
			}
			continue
		}
		// With nothing held the pull is a long poll, which returns on
		// the first event; while events are held the loop comes round
		// every second to extend them and age the gauge.
		wait := time.Second
		if oldest.IsZero() {
			wait = pullWait
		}
		ds, err := r.src.Next(r.ctx, min(room, 100), wait)
		if r.ctx.Err() != nil && err != nil {
			return
		}
		if err != nil {
			log.Warn("deliveries: fetch order events", "err", err)
			_ = retry.Sleep(r.ctx, time.Second)
			continue
		}
		for _, qe := range ds {
			r.enqueue(qe)
		}
	}
}

// limiter returns the endpoint's rate limit, made again when the
// configured rate changed; nil when there is none.
func (r *runner) limiter(perSecond float64) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if perSecond != r.limitAt {
		r.limitAt, r.limit = perSecond, nil
		if perSecond > 0 {
			r.limit = rate.NewLimiter(rate.Limit(perSecond), 1)
		}
	}
	return r.limit
}

// lane is the lane of an order's events: its account and order code.
func lane(o *delivery.Order) string { return o.Account + "/" + o.Code }

// enqueue puts an event at the end of its order's lane, starting the lane
// when it was empty. The lane, the delivery log's record and the body come
// from the event's headers, or, for an event published without them, from
// its payload, read here once.
func (r *runner) enqueue(qe ordersync.QueuedOrderEvent) {
	ev := qe.Event()
	h := &held{qe: qe, at: ev.PublishedAt}
	if o, ok := eventOrder(ev); ok {
		h.order = o
	} else if h.order, h.orderErr = delivery.ParseOrder(ev.Payload); h.orderErr != nil {
		h.order = &delivery.Order{}
	}
	if h.at.IsZero() {
		h.at = time.Now()
	}
	key := lane(h.order)
	if !r.lanes.push(key, h) {
		return
	}
	r.d.wg.Add(1)
	go func() {
		defer r.d.wg.Done()
		r.drain(key)
	}()
}

// eventOrder is the order of an event that carries its facts as headers.
func eventOrder(ev ordersync.OrderEvent) (*delivery.Order, bool) {
	if ev.StatusChangeAt <= 0 || ev.Account == "" || ev.OrderCode == "" || ev.To == "" {
		return nil, false
	}
	return delivery.OrderOf(ev.Account, ev.OrderCode, string(ev.To), ev.Payload, ev.StatusChangeAt)
}

// drain delivers a lane's events one after the other until it is empty.
// A runner that stops releases the lane's events, undelivered, so that the
// endpoint's next runner takes them back at once (Resume) rather than
// after the ack wait.
func (r *runner) drain(key string) {
	failed := 0
	for {
		if r.ctx.Err() != nil {
			r.release(r.lanes.drop(key))
			return
		}
		h, ok := r.lanes.head(key)
		if !ok {
			return
		}
		if !r.deliver(h) {
			// Unless the runner stopped, the store or the queue failed to
			// settle it: an outage to the policy, which retries and never
			// dead-letters it. It stays at the head of its lane, so the
			// order's later events wait behind it.
			failed++
			_ = retry.Sleep(r.ctx, r.d.retries.Decide(failed, 0, retry.Failure{Kind: retry.Outage}).After)
			continue
		}
		failed = 0
		r.lanes.pop(key)
	}
}

// release hands back what a stopped runner held, once it reads no more: a
// pull of its still open would take the events again, and drop them.
func (r *runner) release(hs []*held) {
	if len(hs) == 0 {
		return
	}
	<-r.reading
	for _, h := range hs {
		_ = h.qe.Release()
	}
}

// settleCtx is the context an event is settled in once the endpoint has
// answered for it: the runner stopping then must not leave it unsettled,
// or the endpoint's next runner waits out its ack wait, delivers it again,
// and only then what came after it.
func (r *runner) settleCtx() context.Context { return context.WithoutCancel(r.ctx) }

// deliver tries one event until it is delivered, refused for good or out
// of time, and reports whether it was settled. How it ended goes to the
// delivery log before the event is settled.
func (r *runner) deliver(h *held) bool {
	qe, o := h.qe, h.order
	ev := qe.Event()
	ep := r.endpoint()
	hookEv, ok := ordersync.HookEventOf(ev.Subject)
	if !ok || !ep.Wants(hookEv) {
		return qe.Ack(r.settleCtx()) == nil
	}
	published := ev.PublishedAt
	if published.IsZero() {
		published = time.Now()
	}
	err := h.orderErr
	var body []byte
	if err == nil {
		body, err = o.EventBody(string(hookEv), published, string(ev.From))
	}
	if err != nil {
		r.d.cfg.Logger.Error("deliveries: encode event", "endpoint", ep.ID, "msg_id", ev.MsgID, "err", err)
		return qe.Ack(r.settleCtx()) == nil
	}
	id := delivery.WebhookID(ep.ID, ev.MsgID)
	rec := ordersync.DeliveryRecord{WebhookID: id, EndpointID: ep.ID, Event: hookEv, Account: o.Account,
		OrderCode: o.Code, OrderStatus: ordersync.Status(o.Status)}
	if _, ok := qe.(replayed); ok {
		rec.Detail = "replay"
	}
	for attempts := 1; ; attempts++ {
		ep = r.endpoint()
		if lim := r.limiter(ep.RatePerSecond); lim != nil {
			if err := lim.Wait(r.ctx); err != nil {
				return false
			}
		}
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			return false
		}
		r.log.attempting(1)
		res := r.d.attempt(r.ctx, r.client, ep, id, body, ev.TraceParent)
		r.log.attempting(-1)
		<-r.sem
		if r.ctx.Err() != nil && res.verdict != delivered {
			return false
		}
		r.d.metrics.attempts.WithLabelValues(ep.ID, res.label).Inc()
		rec.Attempts, rec.Status = attempts, res.status
		switch res.verdict {
		case delivered:
			r.d.metrics.events.WithLabelValues(ep.ID, "delivered").Inc()
			r.d.metrics.lag.WithLabelValues(ep.ID).Observe(time.Since(published).Seconds())
			rec.Outcome = ordersync.DeliveryDelivered
			ctx := r.settleCtx()
			return r.log.add(ctx, rec) && qe.Ack(ctx) == nil
		case gone:
			r.d.cfg.Logger.Warn("deliveries: endpoint answered 410 Gone; disabling it", "endpoint", ep.ID)
			// The row goes in before the endpoint is disabled: a sync that
			// sees it disabled stops this runner, and would drop a row
			// still to be written.
			rec.Outcome, rec.Detail = ordersync.DeliveryGone, "410 Gone: the endpoint is disabled; its events wait until it is enabled"
			r.log.add(r.settleCtx(), rec)
			if err := r.d.cfg.Endpoints.DisableEndpoint(r.ctx, ep.ID, ordersync.DisabledGone); err != nil {
				r.d.cfg.Logger.Error("deliveries: disable endpoint", "endpoint", ep.ID, "err", err)
			}
			r.d.metrics.disabled.WithLabelValues(ep.ID).Set(1)
			r.cancel()
			r.d.Notify()
			return false
		}
		// A 410 Gone was the runner's own business above: it disables the
		// endpoint rather than settle the event. The rest is the policy's.
		f := retry.Failure{Kind: retry.Transient, Wait: res.retryAfter}
		if res.verdict == permanent {
			f = retry.Failure{Kind: retry.Permanent, Reason: "refused"}
		}
		next := r.d.retries.Decide(attempts, time.Since(published), f)
		if !next.Retry {
			return r.deadLetter(qe, rec, body, next.Reason, res)
		}
		if retry.Sleep(r.ctx, next.After) != nil {
			return false
		}
	}
}

// deadLetter settles an event as a delivery dead letter; rec is its
// delivery so far, why says how it ended.
func (r *runner) deadLetter(qe ordersync.QueuedOrderEvent, rec ordersync.DeliveryRecord, body []byte, why string, res attemptResult) bool {
	letter := ordersync.DeliveryDeadLetter{
		EndpointID: rec.EndpointID, Event: rec.Event, WebhookID: rec.WebhookID, Account: rec.Account, OrderCode: rec.OrderCode,
		Attempts: rec.Attempts, LastStatus: res.status, LastBody: res.answer, Body: body,
	}
	// The start of the answer on one line: the log shows it in a table.
	answer := strings.Join(strings.Fields(ordersync.Clip(res.answer, 200)), " ")
	if res.err != nil {
		letter.LastError = res.err.Error()
		answer = letter.LastError
	}
	letterID, err := r.d.cfg.DeadLetters.AddDeliveryDeadLetter(r.ctx, letter)
	if err != nil {
		// Not settled: it comes back and is tried again.
		r.d.cfg.Logger.Error("deliveries: record dead letter", "endpoint", rec.EndpointID, "webhook_id", rec.WebhookID, "err", err)
		return false
	}
	r.d.cfg.Logger.Warn("deliveries: dead letter", "endpoint", rec.EndpointID, "webhook_id", rec.WebhookID, "event", rec.Event, "status", res.status, "attempts", rec.Attempts)
	r.d.metrics.events.WithLabelValues(rec.EndpointID, "dead_lettered").Inc()
	rec.Outcome, rec.Detail = ordersync.DeliveryDeadLettered, fmt.Sprintf("dead letter %d: %s", letterID, why)
	if answer != "" {
		rec.Detail += ": " + answer
	}
	ctx := r.settleCtx()
	return r.log.add(ctx, rec) && qe.Ack(ctx) == nil
}
