package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// DispatcherConfig configures HTTP deliveries of order events.
type DispatcherConfig struct {
	Endpoints   ordersync.Endpoints
	DeadLetters ordersync.DeliveryDeadLetters
	// Log records how each delivery ended, for the order's event log.
	Log    ordersync.DeliveryLog
	Stream ordersync.OrderEventStream
	// Timeout bounds one attempt, answer included. Default 10s.
	Timeout time.Duration
	// RetryWindow is how long after an event was published its retries
	// go on before it becomes a dead letter. Default 72h.
	RetryWindow time.Duration
	// MaxRetryAfter caps the wait a 429 or 503 may ask for. Default 1h.
	MaxRetryAfter time.Duration
	// Concurrency bounds the requests in flight to one endpoint. Default 8.
	Concurrency int
	// Refresh is how often the endpoints are read again, so changes made
	// by another process take effect here; Notify does it at once.
	// Default 2s.
	Refresh time.Duration
	// Client sends the requests; default one without redirects, with
	// Timeout.
	Client     *http.Client
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// The retry schedule: exponential from retryInitial, doubling, capped at
// retryMaxInterval, each wait randomised by ±50%. Published in the README.
const (
	retryInitial     = time.Second
	retryMultiplier  = 2
	retryMaxInterval = time.Hour
	retryJitter      = 0.5
)

// maxAnswer is how much of an endpoint's answer is read and kept.
const maxAnswer = 1024

func (c DispatcherConfig) withDefaults() DispatcherConfig {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.RetryWindow <= 0 {
		c.RetryWindow = 72 * time.Hour
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Hour
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.Refresh <= 0 {
		c.Refresh = 2 * time.Second
	}
	if c.Client == nil {
		c.Client = &http.Client{
			Timeout: c.Timeout,
			// A redirect is an answer: the endpoint's URL is wrong.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	defaultDeps(&c.Registerer, &c.Logger, nil)
	return c
}

func (c DispatcherConfig) validate() error {
	switch {
	case c.Endpoints == nil:
		return errors.New("worker: DispatcherConfig.Endpoints is required")
	case c.DeadLetters == nil:
		return errors.New("worker: DispatcherConfig.DeadLetters is required")
	case c.Log == nil:
		return errors.New("worker: DispatcherConfig.Log is required")
	case c.Stream == nil:
		return errors.New("worker: DispatcherConfig.Stream is required")
	}
	return nil
}

// Dispatcher delivers order events to HTTP endpoints, signed as Standard
// Webhooks. Each endpoint reads the orders stream through its own durable
// consumer and delivers through its own goroutines, so a slow or failing
// endpoint holds only its own events.
//
// Per order, an endpoint receives events in the order they were
// published: each order's events wait in a lane behind the one being
// delivered or retried, while other orders' lanes flow. The lanes are this
// process's, so one process delivers at a time (the deliveries lease), and
// a runner that starts where another stopped (after a takeover, a restart,
// a change of the endpoint's events) first takes back the events left
// unsettled (OrderEventSource.Resume).
type Dispatcher struct {
	cfg     DispatcherConfig
	wake    chan struct{}
	metrics dispatchMetrics

	mu      sync.Mutex
	runners map[string]*runner
	// running is when Run started: any earlier holder of the lease had
	// stopped by then. stopped is when each endpoint's last runner in this
	// process was stopped.
	running time.Time
	stopped map[string]time.Time
	wg      sync.WaitGroup
}

type dispatchMetrics struct {
	events   *prometheus.CounterVec
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	lag      *prometheus.HistogramVec
	oldest   *prometheus.GaugeVec
	disabled *prometheus.GaugeVec
}

// NewDispatcher returns a dispatcher; call Run.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), runners: map[string]*runner{}, stopped: map[string]time.Time{}}
	d.metrics = dispatchMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_delivery_events_total",
			Help: "Order events settled per endpoint, by outcome (delivered, dead_lettered).",
		}, []string{"endpoint", "outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersync_delivery_attempts_total",
			Help: "HTTP delivery attempts per endpoint, by result (2xx, 3xx, 4xx, 410, 429, 5xx, timeout, network).",
		}, []string{"endpoint", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ordersync_delivery_attempt_duration_seconds",
			Help:    "Time from sending a delivery to its answer, per endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"endpoint"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ordersync_delivery_lag_seconds",
			Help:    "Time from an order event's publication to the endpoint's 2xx, per endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 12),
		}, []string{"endpoint"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_delivery_oldest_undelivered_age_seconds",
			Help: "Age of the oldest order event this process holds undelivered for an endpoint (0: none).",
		}, []string{"endpoint"}),
		disabled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_delivery_endpoint_disabled",
			Help: "1 when an endpoint is disabled (by hand, or by a 410 Gone), else 0.",
		}, []string{"endpoint"}),
	}
	for _, c := range []prometheus.Collector{d.metrics.events, d.metrics.attempts, d.metrics.duration, d.metrics.lag, d.metrics.oldest, d.metrics.disabled} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Notify makes Run read the endpoints now, as after a change through the
// admin API.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for its goroutines. Events in
// flight when it stops stay unacknowledged and come back, to this process
// or another, after the consumer's ack wait; the next Run waits for them
// before it delivers a later event of the same endpoint.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	d.running = time.Now()
	d.mu.Unlock()
	t := time.NewTicker(d.cfg.Refresh)
	defer t.Stop()
	log := startLogWriter(d.cfg.Log, d.cfg.Logger)
	failing := false
	for {
		err := d.sync(ctx, log)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			d.cfg.Logger.Error("deliveries: read endpoints", "err", err)
			failing = true
		case err == nil && failing:
			failing = false
		}
		select {
		case <-ctx.Done():
			d.mu.Lock()
			for id, r := range d.runners {
				r.cancel()
				delete(d.runners, id)
			}
			d.mu.Unlock()
			d.wg.Wait()
			log.close()
			return nil
		case <-d.wake:
		case <-t.C:
		}
	}
}

// sync starts, restarts and stops runners to match the endpoints.
func (d *Dispatcher) sync(ctx context.Context, log *logWriter) error {
	eps, err := d.cfg.Endpoints.ListEndpoints(ctx)
	if err != nil {
		return err
	}
	want := map[string]*ordersync.Endpoint{}
	for _, ep := range eps {
		d.metrics.disabled.WithLabelValues(ep.ID).Set(b2f(ep.Disabled))
		if !ep.Disabled {
			want[ep.ID] = ep
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, r := range d.runners {
		ep, ok := want[id]
		if ok && slices.Equal(ep.Events, r.endpoint().Events) {
			r.ep.Store(ep) // URL, secrets: the next attempt uses them
			continue
		}
		r.cancel()
		delete(d.runners, id)
		d.stopped[id] = time.Now()
		if !slices.ContainsFunc(eps, func(e *ordersync.Endpoint) bool { return e.ID == id }) {
			d.forget(ctx, id)
		}
	}
	for id, ep := range want {
		if _, ok := d.runners[id]; ok {
			continue
		}
		src, err := d.cfg.Stream.EndpointEvents(ctx, id, ep.Events, ep.CreatedAt)
		if err != nil {
			d.cfg.Logger.Error("deliveries: open the endpoint's consumer", "endpoint", id, "err", err)
			continue
		}
		// The events the endpoint's last runner, here or in another
		// process, left unsettled: that one stopped by then.
		stoppedBy := d.running
		if at, ok := d.stopped[id]; ok && at.After(stoppedBy) {
			stoppedBy = at
		}
		d.runners[id] = d.start(ctx, ep, src, log, stoppedBy)
	}
	return nil
}

// forget deletes a deleted endpoint's consumer and its series.
func (d *Dispatcher) forget(ctx context.Context, id string) {
	if err := d.cfg.Stream.DeleteEndpointEvents(ctx, id); err != nil {
		d.cfg.Logger.Error("deliveries: delete the endpoint's consumer", "endpoint", id, "err", err)
	}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		d.metrics.events, d.metrics.attempts, d.metrics.duration, d.metrics.lag, d.metrics.oldest, d.metrics.disabled,
	} {
		v.DeletePartialMatch(prometheus.Labels{"endpoint": id})
	}
}

// Forget stops delivering to a deleted endpoint and deletes its consumer.
func (d *Dispatcher) Forget(ctx context.Context, id string) error {
	d.mu.Lock()
	if r, ok := d.runners[id]; ok {
		r.cancel()
		delete(d.runners, id)
		d.stopped[id] = time.Now()
	}
	d.mu.Unlock()
	d.forget(ctx, id)
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// verdict is what one attempt's answer means.
type verdict int

const (
	delivered verdict = iota
	retry
	permanent
	gone
)

// attemptResult is one attempt's answer.
type attemptResult struct {
	verdict    verdict
	status     int // 0: no answer
	answer     string
	err        error
	retryAfter time.Duration // from a 429 or 503, capped; 0 when none
	label      string
}

// attempt sends one signed request and classifies the answer.
func (d *Dispatcher) attempt(ctx context.Context, ep *ordersync.Endpoint, id string, body []byte) attemptResult {
	now := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return attemptResult{verdict: permanent, err: fmt.Errorf("build request: %w", err), label: "network"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ordersync-webhooks")
	if err := delivery.Sign(req.Header, id, now, body, ep.SigningSecrets(now)...); err != nil {
		return attemptResult{verdict: permanent, err: err, label: "network"}
	}
	resp, err := d.cfg.Client.Do(req)
	d.metrics.duration.WithLabelValues(ep.ID).Observe(time.Since(now).Seconds())
	if err != nil {
		label := "network"
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			label = "timeout"
		}
		return attemptResult{verdict: retry, err: err, label: label}
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	r := attemptResult{status: resp.StatusCode, answer: string(answer)}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		r.verdict, r.label = delivered, "2xx"
	case code == http.StatusGone:
		r.verdict, r.label = gone, "410"
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		r.verdict, r.label = retry, strconv.Itoa(code)
		if code == http.StatusServiceUnavailable {
			r.label = "5xx"
		}
		r.retryAfter, _ = ordersync.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now(), d.cfg.MaxRetryAfter)
	case code >= 500:
		r.verdict, r.label = retry, "5xx"
	case code >= 400:
		r.verdict, r.label = permanent, "4xx"
	default:
		r.verdict, r.label = permanent, "3xx"
	}
	return r
}

// newBackoff is the retry schedule of one event.
func newBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.MaxInterval, b.RandomizationFactor = retryInitial, retryMultiplier, retryMaxInterval, retryJitter
	b.MaxElapsedTime = 0 // the window is measured from publication, by the caller
	b.Reset()
	return b
}

// RetrySchedule returns the nominal waits (before jitter) between the
// attempts of one event within window: the published schedule.
func RetrySchedule(window time.Duration) []time.Duration {
	var out []time.Duration
	total, wait := time.Duration(0), retryInitial
	for total+wait <= window {
		out = append(out, wait)
		total += wait
		wait = min(wait*retryMultiplier, retryMaxInterval)
	}
	return out
}

// runner delivers one endpoint's events.
type runner struct {
	d      *Dispatcher
	ep     atomic.Pointer[ordersync.Endpoint]
	src    ordersync.OrderEventSource
	log    *logWriter
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}

	// stoppedBy is when the runner before this one stopped (see Resume).
	stoppedBy time.Time

	lanes *lanes

	mu      sync.Mutex
	limit   *rate.Limiter // nil: no rate cap
	limitAt float64       // the rate limit was made for
}

// maxHeld bounds the events one endpoint's runner holds in this process.
const maxHeld = 500

// extendEvery is how often held events are extended: well within the
// consumer's ack wait (30s).
const extendEvery = 10 * time.Second

func (d *Dispatcher) start(ctx context.Context, ep *ordersync.Endpoint, src ordersync.OrderEventSource, log *logWriter, stoppedBy time.Time) *runner {
	rctx, cancel := context.WithCancel(ctx)
	r := &runner{d: d, src: src, log: log, stoppedBy: stoppedBy, ctx: rctx, cancel: cancel, sem: make(chan struct{}, d.cfg.Concurrency),
		lanes: newLanes()}
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
	// An order's earlier event another runner left unsettled must not be
	// overtaken by its later one.
	if err := r.src.Resume(r.ctx, r.stoppedBy); err != nil {
		return
	}
	extended := time.Now()
	for r.ctx.Err() == nil {
		room := maxHeld - r.lanes.len()
		oldest := r.lanes.oldest()
		var extend []*held
		if time.Since(extended) >= extendEvery {
			extended = time.Now()
			extend = r.lanes.all()
		}
		// Every event held, the one being retried and those waiting behind
		// it in their lanes, stays ours: one whose ack wait ran out would be
		// handed out again, to this process or another, out of its order.
		for _, h := range extend {
			_ = h.d.Extend()
		}
		if oldest.IsZero() {
			gauge.Set(0)
		} else {
			gauge.Set(time.Since(oldest).Seconds())
		}
		if room <= 0 {
			select {
			case <-r.lanes.space:
			case <-time.After(time.Second):
			case <-r.ctx.Done():
			}
			continue
		}
		ds, err := r.src.Next(r.ctx, min(room, 100), time.Second)
		if err != nil {
			if r.ctx.Err() == nil {
				log.Warn("deliveries: fetch order events", "err", err)
				_ = sleep(r.ctx, time.Second)
			}
			continue
		}
		for _, dl := range ds {
			r.enqueue(dl)
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

// eventOrder is what an event's payload says of its order.
type eventOrder struct {
	Account     string           `json:"account"`
	OrderCode   string           `json:"orderCode"`
	OrderStatus ordersync.Status `json:"orderStatus"`
}

func orderOf(payload []byte) eventOrder {
	var o eventOrder
	_ = json.Unmarshal(payload, &o)
	return o
}

// lane is the lane of an event: its account and order code.
func (o eventOrder) lane() string { return o.Account + "/" + o.OrderCode }

// enqueue puts an event at the end of its order's lane, starting the lane
// when it was empty.
func (r *runner) enqueue(dl ordersync.OrderEventDelivery) {
	ev := dl.Event()
	h := &held{d: dl, order: orderOf(ev.Payload), at: ev.PublishedAt}
	if h.at.IsZero() {
		h.at = time.Now()
	}
	key := h.order.lane()
	if !r.lanes.push(key, h) {
		return
	}
	r.d.wg.Add(1)
	go func() {
		defer r.d.wg.Done()
		r.drain(key)
	}()
}

// drain delivers a lane's events one after the other until it is empty.
func (r *runner) drain(key string) {
	for {
		if r.ctx.Err() != nil {
			r.lanes.drop(key)
			return
		}
		h, ok := r.lanes.head(key)
		if !ok {
			return
		}
		if !r.deliver(h) {
			// Stopping, or the store failed: this event and those behind
			// it stay unsettled and come back after the ack wait, in order.
			r.lanes.drop(key)
			return
		}
		r.lanes.pop(key)
	}
}

// deliver tries one event until it is delivered, refused for good or out
// of time, and reports whether it was settled. How it ended goes to the
// delivery log before the event is settled.
func (r *runner) deliver(h *held) bool {
	dl, o := h.d, h.order
	ev := dl.Event()
	ep := r.endpoint()
	hookEv, ok := ordersync.HookEventOf(ev.Subject)
	if !ok || !ep.Wants(hookEv) {
		return dl.Ack(r.ctx) == nil
	}
	published := ev.PublishedAt
	if published.IsZero() {
		published = time.Now()
	}
	body, err := delivery.OrderEventBody(string(hookEv), published, ev.Payload, string(ev.FromStatus))
	if err != nil {
		r.d.cfg.Logger.Error("deliveries: encode event", "endpoint", ep.ID, "msg_id", ev.MsgID, "err", err)
		return dl.Ack(r.ctx) == nil
	}
	id := delivery.WebhookID(ep.ID, ev.MsgID)
	rec := ordersync.DeliveryRecord{WebhookID: id, EndpointID: ep.ID, Event: hookEv, Account: o.Account,
		OrderCode: o.OrderCode, OrderStatus: o.OrderStatus}
	if _, ok := dl.(replayed); ok {
		rec.Detail = "replay"
	}
	bo := newBackoff()
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
		res := r.d.attempt(r.ctx, ep, id, body)
		<-r.sem
		if r.ctx.Err() != nil {
			return false
		}
		r.d.metrics.attempts.WithLabelValues(ep.ID, res.label).Inc()
		rec.Attempts, rec.Status = attempts, res.status
		switch res.verdict {
		case delivered:
			r.d.metrics.events.WithLabelValues(ep.ID, "delivered").Inc()
			r.d.metrics.lag.WithLabelValues(ep.ID).Observe(time.Since(published).Seconds())
			rec.Outcome = ordersync.DeliveryDelivered
			return r.log.add(r.ctx, rec) && dl.Ack(r.ctx) == nil
		case gone:
			r.d.cfg.Logger.Warn("deliveries: endpoint answered 410 Gone; disabling it", "endpoint", ep.ID)
			if err := r.d.cfg.Endpoints.DisableEndpoint(r.ctx, ep.ID, ordersync.DisabledGone); err != nil {
				r.d.cfg.Logger.Error("deliveries: disable endpoint", "endpoint", ep.ID, "err", err)
			}
			r.d.metrics.disabled.WithLabelValues(ep.ID).Set(1)
			rec.Outcome, rec.Detail = ordersync.DeliveryGone, "410 Gone: the endpoint is disabled; its events wait until it is enabled"
			r.log.add(r.ctx, rec)
			r.cancel()
			r.d.Notify()
			return false
		case permanent:
			return r.deadLetter(dl, rec, body, "refused", res)
		}
		wait := res.retryAfter
		if wait <= 0 {
			wait = bo.NextBackOff()
		}
		if time.Since(published)+wait > r.d.cfg.RetryWindow {
			return r.deadLetter(dl, rec, body, "out of retries", res)
		}
		if sleep(r.ctx, wait) != nil {
			return false
		}
	}
}

// deadLetter settles an event as a delivery dead letter; rec is its
// delivery so far, why says how it ended.
func (r *runner) deadLetter(dl ordersync.OrderEventDelivery, rec ordersync.DeliveryRecord, body []byte, why string, res attemptResult) bool {
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
	return r.log.add(r.ctx, rec) && dl.Ack(r.ctx) == nil
}

func (d *Dispatcher) once(ctx context.Context, ep *ordersync.Endpoint, id string, body []byte) ordersync.DeliveryReport {
	res := d.attempt(ctx, ep, id, body)
	d.metrics.attempts.WithLabelValues(ep.ID, res.label).Inc()
	rep := ordersync.DeliveryReport{WebhookID: id, Delivered: res.verdict == delivered, Status: res.status, Answer: res.answer}
	if res.err != nil {
		rep.Error = res.err.Error()
	}
	return rep
}

// Ping sends a signed "ping" event to an endpoint once, disabled or not,
// and reports the answer.
func (d *Dispatcher) Ping(ctx context.Context, endpointID string) (ordersync.DeliveryReport, error) {
	ep, err := d.cfg.Endpoints.FindEndpoint(ctx, endpointID)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	now := time.Now()
	body, err := delivery.PingBody(ep.ID, now)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	return d.once(ctx, ep, delivery.WebhookID(ep.ID, "ping:"+now.Format(time.RFC3339Nano)), body), nil
}

// ReplayDeadLetter sends a delivery dead letter again, once, with its
// webhook-id and body; a 2xx marks it replayed.
func (d *Dispatcher) ReplayDeadLetter(ctx context.Context, id int64) (ordersync.DeliveryReport, error) {
	dl, err := d.cfg.DeadLetters.FindDeliveryDeadLetter(ctx, id)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	ep, err := d.cfg.Endpoints.FindEndpoint(ctx, dl.EndpointID)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	if ep.Disabled {
		return ordersync.DeliveryReport{}, fmt.Errorf("replay delivery dead letter %d: endpoint %s: %w", id, ep.ID, ordersync.ErrEndpointDisabled)
	}
	rep := d.once(ctx, ep, dl.WebhookID, dl.Body)
	if rep.Delivered {
		if err := d.cfg.DeadLetters.MarkDeliveryDeadLetterReplayed(ctx, id, time.Now()); err != nil {
			return rep, err
		}
		d.metrics.events.WithLabelValues(ep.ID, "delivered").Inc()
		rec := ordersync.DeliveryRecord{WebhookID: dl.WebhookID, EndpointID: ep.ID, Event: dl.Event, Account: dl.Account,
			OrderCode: dl.OrderCode, Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: rep.Status,
			Detail: fmt.Sprintf("replay of delivery dead letter %d", id)}
		if err := d.cfg.Log.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec}); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Replay queues every stored event the endpoint subscribes to, published
// at or after since, for delivery again under the same rules (and the
// same webhook-ids) as the first time, behind the events of the same order
// already in flight. It returns how many it queued.
func (d *Dispatcher) Replay(ctx context.Context, endpointID string, since time.Time) (int, error) {
	ep, err := d.cfg.Endpoints.FindEndpoint(ctx, endpointID)
	if err != nil {
		return 0, err
	}
	if ep.Disabled {
		return 0, fmt.Errorf("replay to endpoint %s: %w", ep.ID, ordersync.ErrEndpointDisabled)
	}
	d.Notify()
	var r *runner
	for r == nil {
		d.mu.Lock()
		r = d.runners[ep.ID]
		d.mu.Unlock()
		if r == nil && sleep(ctx, 50*time.Millisecond) != nil {
			return 0, fmt.Errorf("replay to endpoint %s: %w", ep.ID, ctx.Err())
		}
	}
	n := 0
	err = d.cfg.Stream.OrderEventsSince(ctx, since, ep.Events, func(ev ordersync.OrderEvent) error {
		r.enqueue(replayed{ev})
		n++
		return nil
	})
	return n, err
}

// replayed is an event read again from the stream: nothing to settle.
type replayed struct{ ev ordersync.OrderEvent }

func (r replayed) Event() ordersync.OrderEvent { return r.ev }
func (replayed) Ack(context.Context) error     { return nil }
func (replayed) Extend() error                 { return nil }

var _ ordersync.Deliverer = (*Dispatcher)(nil)
