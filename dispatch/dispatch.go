package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/retry"
	"github.com/ordersync/ordersync/internal/tracing"
)

// Config configures HTTP deliveries of order events.
type Config struct {
	Endpoints   ordersync.Endpoints
	DeadLetters ordersync.DeliveryDeadLetters
	// Log records how each delivery ended, for the order's event log.
	Log    ordersync.DeliveryLog
	Stream ordersync.OrderEventStream
	// Timeout bounds one attempt, answer included. Default
	// DefaultTimeout.
	Timeout time.Duration
	// RetryInitial is the first wait of an event's retries, which double
	// from it up to an hour. Default 1s.
	RetryInitial time.Duration
	// AckWait is how long the endpoint's consumer lets this process hold
	// an event before another may get it; what is held is extended every
	// third of it. At least 3s (the runner's loop extends between its
	// fetches, which wait up to a second). Default 30s.
	AckWait time.Duration
	// RetryWindow is how long after an event was published its retries
	// go on before it becomes a dead letter. Default 72h.
	RetryWindow time.Duration
	// MaxRetryAfter caps the wait a 429 or 503 may ask for. Default 1h.
	MaxRetryAfter time.Duration
	// MaxHeld bounds the events one endpoint's runner holds in this
	// process, replayed ones included; the rest wait in the stream.
	// Default 500.
	MaxHeld int
	// Concurrency bounds the requests in flight to one endpoint. Default
	// DefaultConcurrency.
	Concurrency int
	// Refresh is how often the endpoints are read again, so changes made
	// by another process take effect here; Notify does it at once.
	// Default 2s.
	Refresh time.Duration
	// Client sends the requests. Default: each endpoint's runner has one
	// of its own, without redirects, with Timeout, holding at most
	// Concurrency connections and keeping them for the next requests, so
	// that endpoints at one host do not share the bound.
	Client     *http.Client
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Tracer traces each attempt and sends its traceparent; nil: off.
	Tracer *tracing.Tracer
}

// newClient returns a client without redirects, with timeout, that holds
// at most conns connections to a host and keeps them between requests.
// The default transport keeps two idle connections per host: a burst at
// conns requests would dial and close one per delivery beyond those two.
// And a request that finds no idle connection dials one even when a
// request just finished, because the transport puts that one back a moment
// after its body is closed; on a loaded machine it often wins the race and
// the dialled connection is one too many, closed again at once. With at
// most conns per host the request waits for the connection coming back.
func newClient(conns int, timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	tr.MaxConnsPerHost = conns
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		// A redirect is an answer: the endpoint's URL is wrong.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// The defaults of Config.Concurrency and Config.Timeout. An endpoint that
// holds a share h of its requests until the timeout t takes at most about
// Concurrency/(h·t) deliveries a second (8/(0.02·10 s) = 40).
const (
	DefaultConcurrency = 8
	DefaultTimeout     = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RetryInitial <= 0 {
		c.RetryInitial = retryInitial
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.RetryWindow <= 0 {
		c.RetryWindow = 72 * time.Hour
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Hour
	}
	if c.MaxHeld <= 0 {
		c.MaxHeld = 500
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Refresh <= 0 {
		c.Refresh = 2 * time.Second
	}
	if c.Client == nil {
		c.Client = newClient(c.Concurrency, c.Timeout)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Endpoints == nil:
		return errors.New("dispatch: Config.Endpoints is required")
	case c.DeadLetters == nil:
		return errors.New("dispatch: Config.DeadLetters is required")
	case c.Log == nil:
		return errors.New("dispatch: Config.Log is required")
	case c.Stream == nil:
		return errors.New("dispatch: Config.Stream is required")
	case c.AckWait < 3*time.Second:
		return fmt.Errorf("dispatch: Config.AckWait %s must be at least 3s", c.AckWait)
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
	cfg     Config
	retries *retry.Policy
	wake    chan struct{}
	metrics dispatchMetrics
	// ownClients: Config.Client was not given, so each runner makes its
	// own (see newClient).
	ownClients bool

	mu      sync.Mutex
	runners map[string]*runner
	// started is closed, and replaced, when runners start.
	started chan struct{}
	// running is when Run started: any earlier holder of the lease had
	// stopped by then. stopped is each endpoint's last runner in this
	// process that was stopped.
	running time.Time
	stopped map[string]stoppedRunner
	wg      sync.WaitGroup
}

// New returns a dispatcher; call Run.
func New(cfg Config) (*Dispatcher, error) {
	ownClients := cfg.Client == nil
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, retries: deliveryPolicy(cfg.RetryInitial, cfg.RetryWindow), wake: make(chan struct{}, 1), runners: map[string]*runner{}, stopped: map[string]stoppedRunner{}, started: make(chan struct{}), ownClients: ownClients}
	var err error
	if d.metrics, err = newDispatchMetrics(cfg.Registerer); err != nil {
		return nil, err
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

// Run delivers until ctx ends, then waits for its goroutines. An event the
// endpoint took while it stopped is settled; the rest it holds is released,
// back at once; a process that dies leaves its events to come back after
// the consumer's ack wait. The next Run, here or in another process, takes
// them back before it delivers a later event of the same endpoint.
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
		d.stop(id, r)
		if !slices.ContainsFunc(eps, func(e *ordersync.Endpoint) bool { return e.ID == id }) {
			d.forget(ctx, id)
		}
	}
	for id, ep := range want {
		if _, ok := d.runners[id]; ok {
			continue
		}
		src, err := d.cfg.Stream.EndpointEvents(ctx, id, ep.Events, ep.CreatedAt, d.cfg.AckWait)
		if err != nil {
			d.cfg.Logger.Error("deliveries: open the endpoint's consumer", "endpoint", id, "err", err)
			continue
		}
		// The events the endpoint's last runner, here or in another
		// process, left unsettled: that one stopped by then.
		stoppedBy := d.running
		last := d.stopped[id]
		if last.at.After(stoppedBy) {
			stoppedBy = last.at
		}
		d.runners[id] = d.start(ctx, ep, src, log, stoppedBy, last.reading)
		close(d.started)
		d.started = make(chan struct{})
	}
	return nil
}

// stoppedRunner is an endpoint's runner that was stopped: when, and a channel
// closed when it no longer reads the endpoint's consumer.
type stoppedRunner struct {
	at      time.Time
	reading <-chan struct{}
}

// stop stops the endpoint's runner; d.mu is held.
func (d *Dispatcher) stop(id string, r *runner) {
	r.cancel()
	delete(d.runners, id)
	d.stopped[id] = stoppedRunner{at: time.Now(), reading: r.reading}
}

// forget deletes a deleted endpoint's consumer and its series.
func (d *Dispatcher) forget(ctx context.Context, id string) {
	if err := d.cfg.Stream.DeleteEndpointEvents(ctx, id); err != nil {
		d.cfg.Logger.Error("deliveries: delete the endpoint's consumer", "endpoint", id, "err", err)
	}
	for _, v := range d.metrics.all() {
		v.DeletePartialMatch(prometheus.Labels{"endpoint": id})
	}
}

// Forget stops delivering to a deleted endpoint and deletes its consumer.
func (d *Dispatcher) Forget(ctx context.Context, id string) error {
	d.mu.Lock()
	if r, ok := d.runners[id]; ok {
		d.stop(id, r)
	}
	d.mu.Unlock()
	d.forget(ctx, id)
	return nil
}

var _ ordersync.Deliverer = (*Dispatcher)(nil)
