package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"

	"github.com/ordersync/ordersync"
)

// RetryConfig shapes the jittered exponential backoff of one fetch.
type RetryConfig struct {
	Initial time.Duration // first wait, default 100ms
	Max     time.Duration // cap of one wait, default 5s
	// MaxElapsed is the budget of one fetch; past it the fetch fails with
	// ErrRetriesExhausted. Default 20s.
	MaxElapsed          time.Duration
	Multiplier          float64 // default 2
	RandomizationFactor float64 // jitter, ±50% by default
}

// BreakerConfig shapes the circuit breaker in front of the upstream.
type BreakerConfig struct {
	// ConsecutiveFailures is how many transient failures in a row open the
	// breaker. Default 10.
	ConsecutiveFailures uint32
	// OpenFor is how long the breaker fails fast before it lets one probe
	// request through. Default 5s.
	OpenFor time.Duration
}

// SyncerConfig configures a Syncer.
type SyncerConfig struct {
	Upstream ordersync.Upstream
	Mirror   ordersync.Mirror
	// RequestsPerSecond caps the requests sent to the upstream; 0 means
	// unlimited. Burst is the bucket size, default a tenth of a second's
	// worth (at least 1).
	RequestsPerSecond float64
	Burst             int
	Retry             RetryConfig
	Breaker           BreakerConfig
	// CredentialsProbeInterval is how often one request is let through while
	// fetching is paused on rejected credentials. Default 10s.
	CredentialsProbeInterval time.Duration
	// Registerer receives the fetch and mirror collectors; nil keeps them
	// unregistered.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Clock stamps fetches; default time.Now. Waits use real timers.
	Clock func() time.Time
}

func (c SyncerConfig) withDefaults() SyncerConfig {
	if c.Burst == 0 && c.RequestsPerSecond > 0 {
		c.Burst = max(1, int(math.Ceil(c.RequestsPerSecond/10)))
	}
	if c.Retry.Initial == 0 {
		c.Retry.Initial = 100 * time.Millisecond
	}
	if c.Retry.Max == 0 {
		c.Retry.Max = 5 * time.Second
	}
	if c.Retry.MaxElapsed == 0 {
		c.Retry.MaxElapsed = 20 * time.Second
	}
	if c.Retry.Multiplier == 0 {
		c.Retry.Multiplier = 2
	}
	if c.Retry.RandomizationFactor == 0 {
		c.Retry.RandomizationFactor = 0.5
	}
	if c.Breaker.ConsecutiveFailures == 0 {
		c.Breaker.ConsecutiveFailures = 10
	}
	if c.Breaker.OpenFor == 0 {
		c.Breaker.OpenFor = 5 * time.Second
	}
	if c.CredentialsProbeInterval == 0 {
		c.CredentialsProbeInterval = 10 * time.Second
	}
	defaultDeps(&c.Registerer, &c.Logger, &c.Clock)
	return c
}

func (c SyncerConfig) validate() error {
	switch {
	case c.Upstream == nil:
		return errors.New("worker: SyncerConfig.Upstream is required")
	case c.Mirror == nil:
		return errors.New("worker: SyncerConfig.Mirror is required")
	case c.RequestsPerSecond < 0 || math.IsNaN(c.RequestsPerSecond) || math.IsInf(c.RequestsPerSecond, 0):
		return fmt.Errorf("worker: SyncerConfig.RequestsPerSecond must be a finite number ≥ 0, got %v", c.RequestsPerSecond)
	case c.Burst < 0:
		return fmt.Errorf("worker: SyncerConfig.Burst must be ≥ 0, got %d", c.Burst)
	case c.Retry.Initial < 0:
		return fmt.Errorf("worker: SyncerConfig.Retry.Initial must be > 0, got %v", c.Retry.Initial)
	case c.Retry.Max < c.Retry.Initial:
		return fmt.Errorf("worker: SyncerConfig.Retry.Max (%v) must be ≥ Retry.Initial (%v)", c.Retry.Max, c.Retry.Initial)
	case c.Retry.MaxElapsed < 0:
		return fmt.Errorf("worker: SyncerConfig.Retry.MaxElapsed must be > 0, got %v", c.Retry.MaxElapsed)
	case c.Retry.Multiplier < 1:
		return fmt.Errorf("worker: SyncerConfig.Retry.Multiplier must be ≥ 1, got %v", c.Retry.Multiplier)
	case c.Retry.RandomizationFactor < 0 || c.Retry.RandomizationFactor > 1:
		return fmt.Errorf("worker: SyncerConfig.Retry.RandomizationFactor must be in [0, 1], got %v", c.Retry.RandomizationFactor)
	case c.Breaker.OpenFor < 0:
		return fmt.Errorf("worker: SyncerConfig.Breaker.OpenFor must be > 0, got %v", c.Breaker.OpenFor)
	case c.CredentialsProbeInterval < 0:
		return fmt.Errorf("worker: SyncerConfig.CredentialsProbeInterval must be > 0, got %v", c.CredentialsProbeInterval)
	}
	return nil
}

// Syncer fetches orders from the upstream and applies them to the mirror.
// It is safe for concurrent use; all its callers share one rate limit, one
// breaker, one Retry-After gate and one credentials pause.
type Syncer struct {
	upstream ordersync.Upstream
	mirror   ordersync.Mirror
	cfg      SyncerConfig
	log      *slog.Logger
	now      func() time.Time
	metrics  *syncerMetrics
	seqs     *seqAllocator
	limiter  *rate.Limiter // nil when unlimited
	breaker  *gobreaker.CircuitBreaker[fetched]

	// notBefore (unix nanoseconds) holds every request back until a
	// Retry-After has passed: a 429 pauses the whole pool, not one caller.
	notBefore atomic.Int64
	// breakerOpenedAt (unix nanoseconds) is when the breaker last opened.
	breakerOpenedAt atomic.Int64

	cred credentialsPause

	// foreground counts the fetches other than the reconciler's that are
	// waiting for the upstream (the Retry-After gate, the rate limit):
	// while there are any, the reconciler's checks wait (see giveWay).
	foreground atomic.Int64
}

// fetchOptions make a fetch other than a webhook's. The zero value is a
// webhook's fetch.
type fetchOptions struct {
	// interactive: a person waits on the admin API, so the fetch does not
	// wait at a closed Retry-After gate but fails at once with an outage
	// (ErrRateLimited) whose Wait says when to come back.
	interactive bool
	// admit, when set, makes the fetch one of the reconciler's checks: it
	// gives way to every other fetch, and each of its requests first passes
	// admit (the reconciler's own budget).
	admit func(ctx context.Context) error
}

// giveWayPoll is how often a check waiting for other fetches to leave looks
// again: far below the interval of any budget the reconciler runs at.
const giveWayPoll = 10 * time.Millisecond

// fetched is the result of one successful request.
type fetched struct {
	order *ordersync.Order
	seq   int64
}

// credentialsPause stops fetching while the upstream rejects the key.
type credentialsPause struct {
	mu        sync.Mutex
	paused    bool
	probing   bool
	nextProbe time.Time
}

// notUpstreamError marks a failure inside the breaker that says nothing
// about the upstream: the fetch sequence could not be taken (the database
// failed) or the caller gave up. The breaker ignores it.
type notUpstreamError struct{ err error }

func (e *notUpstreamError) Error() string { return e.err.Error() }
func (e *notUpstreamError) Unwrap() error { return e.err }

// NewSyncer returns a Syncer.
func NewSyncer(cfg SyncerConfig) (*Syncer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newSyncerMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new syncer: register metrics: %w", err)
	}
	s := &Syncer{
		upstream: cfg.Upstream,
		mirror:   cfg.Mirror,
		cfg:      cfg,
		log:      cfg.Logger,
		now:      cfg.Clock,
		metrics:  m,
		seqs:     newSeqAllocator(cfg.Mirror),
	}
	if cfg.RequestsPerSecond > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), cfg.Burst)
	}
	s.breaker = gobreaker.NewCircuitBreaker[fetched](gobreaker.Settings{
		Name:        "upstream",
		MaxRequests: 1,
		Timeout:     cfg.Breaker.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= cfg.Breaker.ConsecutiveFailures
		},
		// Only transient failures count against the upstream: a 404 or a
		// 401 is an answer, a database or context failure is not its fault.
		IsSuccessful: func(err error) bool { return err == nil || !isTransient(err) },
		IsExcluded: func(err error) bool {
			var nu *notUpstreamError
			return errors.As(err, &nu)
		},
		OnStateChange: s.breakerStateChanged,
	})
	return s, nil
}

func (s *Syncer) breakerStateChanged(_ string, from, to gobreaker.State) {
	switch to {
	case gobreaker.StateOpen:
		s.breakerOpenedAt.Store(time.Now().UnixNano())
		s.metrics.breakerOpen.Set(1)
		if from == gobreaker.StateClosed {
			s.log.Warn("upstream circuit breaker opened: fetches fail fast",
				"consecutive_failures", s.cfg.Breaker.ConsecutiveFailures, "open_for", s.cfg.Breaker.OpenFor)
		}
	case gobreaker.StateHalfOpen:
		s.metrics.breakerOpen.Set(1)
	case gobreaker.StateClosed:
		s.metrics.breakerOpen.Set(0)
		s.log.Info("upstream circuit breaker closed: fetching resumed")
	}
}

// BreakerClosed reports whether the circuit breaker lets requests through
// normally.
func (s *Syncer) BreakerClosed() bool { return s.breaker.State() == gobreaker.StateClosed }

// CredentialsPaused reports whether fetching is paused on rejected
// credentials.
func (s *Syncer) CredentialsPaused() bool {
	s.cred.mu.Lock()
	defer s.cred.mu.Unlock()
	return s.cred.paused
}

// Fetch fetches the order detail of code. The returned seq was taken from
// the mirror immediately before the request that answered was sent; pass it
// to ApplyOrders so an earlier fetch never overwrites a later one.
//
// Transient failures are retried with jittered exponential backoff. Errors
// are *ordersync.UpstreamError for permanent failures (IsPermanent),
// *OutageError when the upstream is unavailable (IsOutage), or the context's
// or the mirror's error.
func (s *Syncer) Fetch(ctx context.Context, account, code string) (*ordersync.Order, int64, error) {
	return s.fetch(ctx, code, fetchOptions{})
}

func (s *Syncer) fetch(ctx context.Context, code string, opts fetchOptions) (*ordersync.Order, int64, error) {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(s.cfg.Retry.Initial),
		backoff.WithMaxInterval(s.cfg.Retry.Max),
		backoff.WithMaxElapsedTime(s.cfg.Retry.MaxElapsed),
		backoff.WithMultiplier(s.cfg.Retry.Multiplier),
		backoff.WithRandomizationFactor(s.cfg.Retry.RandomizationFactor),
	)
	op := func() (fetched, error) { return s.attempt(ctx, code, opts) }
	notify := func(error, time.Duration) { s.metrics.fetchRetries.Inc() }
	res, err := backoff.RetryNotifyWithData(op, backoff.WithContext(b, ctx), notify)
	if err == nil {
		return res.order, res.seq, nil
	}
	if isTransient(err) && !IsOutage(err) {
		err = &OutageError{Op: fetchOp(code), Cause: ErrRetriesExhausted, Wait: s.retryAfterWait(err), Err: err}
	}
	if IsOutage(err) || ordersync.UpstreamErrorKindOf(err) != "" {
		return nil, 0, err // already names the operation
	}
	return nil, 0, fmt.Errorf("%s: %w", fetchOp(code), err)
}

// retryAfterWait is the wait a failure asked for, or what remains of the
// shared gate.
func (s *Syncer) retryAfterWait(err error) time.Duration {
	var ue *ordersync.UpstreamError
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		return ue.RetryAfter
	}
	return max(0, time.Until(time.Unix(0, s.notBefore.Load())))
}

// attempt sends one request through the gate, the credentials pause, the
// rate limiter and the breaker. Errors that must not be retried come back
// wrapped in backoff.Permanent.
func (s *Syncer) attempt(ctx context.Context, code string, opts fetchOptions) (fetched, error) {
	probe, err := s.waitTurn(ctx, code, opts)
	if err != nil {
		return fetched{}, backoff.Permanent(err)
	}
	res, err := s.breaker.Execute(func() (fetched, error) {
		// The sequence is taken here, after every wait, so that the order
		// of sequences is the order in which requests leave.
		seq, err := s.seqs.next(ctx)
		if err != nil {
			return fetched{}, &notUpstreamError{err}
		}
		start := time.Now()
		order, err := s.upstream.GetOrder(ctx, code)
		s.metrics.fetchDuration.Observe(time.Since(start).Seconds())
		if err != nil && ctx.Err() != nil {
			return fetched{}, &notUpstreamError{err}
		}
		if err == nil {
			err = checkFetched(order, code)
		}
		return fetched{order: order, seq: seq}, err
	})
	switch {
	case err == nil:
		s.metrics.fetchRequests.WithLabelValues(outcomeOK).Inc()
		s.endProbe(probe, true)
		return res, nil
	case errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests):
		s.metrics.fetchRequests.WithLabelValues(outcomeBreakerOpen).Inc()
		s.endProbe(probe, false)
		return fetched{}, backoff.Permanent(&OutageError{Op: fetchOp(code), Cause: ErrBreakerOpen, Wait: s.breakerWait()})
	}
	var nu *notUpstreamError
	if errors.As(err, &nu) {
		s.endProbe(probe, false)
		return fetched{}, backoff.Permanent(nu.err)
	}
	var ue *ordersync.UpstreamError
	if !errors.As(err, &ue) {
		// The client promises *UpstreamError; anything else (a cancelled
		// context) is not the upstream's answer.
		s.endProbe(probe, false)
		return fetched{}, backoff.Permanent(err)
	}
	if ue.RetryAfter > 0 {
		s.holdUntil(time.Now().Add(ue.RetryAfter))
	}
	s.metrics.fetchRequests.WithLabelValues(string(ue.Kind)).Inc()
	if ue.Kind == ordersync.UpstreamUnauthorized {
		wait := s.rejectCredentials(ue)
		return fetched{}, backoff.Permanent(&OutageError{Op: fetchOp(code), Cause: ErrCredentialsRejected, Wait: wait, Err: ue})
	}
	// An answer about the order (404, 400) proves the key is accepted; a
	// transient failure proves nothing, and the next probe comes later.
	s.endProbe(probe, !ue.Retryable())
	if !ue.Retryable() {
		return fetched{}, backoff.Permanent(ue)
	}
	return fetched{}, ue
}

// waitTurn waits until a request may leave: past the Retry-After gate (an
// interactive fetch does not wait there) and the credentials pause, then
// the rate limit. A reconciler's check (opts.admit set) first passes its
// own budget and then gives way to the other fetches, which count
// themselves as waiting meanwhile.
func (s *Syncer) waitTurn(ctx context.Context, code string, opts fetchOptions) (probe bool, err error) {
	check := opts.admit != nil
	if check {
		if err := opts.admit(ctx); err != nil {
			return false, fmt.Errorf("wait for the reconcile budget: %w", err)
		}
	} else {
		s.foreground.Add(1)
		defer s.foreground.Add(-1)
	}
	if opts.interactive {
		if wait := s.GateWait(); wait > 0 {
			return false, gateClosed(fetchOp(code), wait)
		}
	} else if err := s.waitGate(ctx); err != nil {
		return false, err
	}
	if probe, err = s.admitCredentials(code); err != nil {
		return false, err
	}
	if check {
		err = s.giveWay(ctx)
	} else if s.limiter != nil {
		if err = s.limiter.Wait(ctx); err != nil {
			err = fmt.Errorf("wait for the upstream rate limit: %w", err)
		}
	}
	if err != nil {
		s.endProbe(probe, false)
		return false, err
	}
	return probe, nil
}

// giveWay waits until no other fetch is waiting for the upstream and the
// rate limit has a request to spare now, and takes it: a check never takes
// a turn a webhook's fetch is queued for.
func (s *Syncer) giveWay(ctx context.Context) error {
	for {
		if s.foreground.Load() == 0 && (s.limiter == nil || s.limiter.Allow()) {
			return nil
		}
		if err := sleep(ctx, giveWayPoll); err != nil {
			return fmt.Errorf("give way to the other fetches: %w", err)
		}
	}
}

// checkFetched rejects a detail that is not the order asked for.
func checkFetched(order *ordersync.Order, code string) error {
	switch {
	case order == nil:
		return &ordersync.UpstreamError{Kind: ordersync.UpstreamProtocol, Op: fetchOp(code), StatusCode: 200, Title: "empty order detail"}
	case order.OrderCode == "":
		order.OrderCode = code
	case order.OrderCode != code:
		return &ordersync.UpstreamError{Kind: ordersync.UpstreamProtocol, Op: fetchOp(code), StatusCode: 200,
			Title: fmt.Sprintf("the service answered with order %s", order.OrderCode)}
	}
	return nil
}

// GateWait is what remains of the shared Retry-After gate: zero when
// requests may leave.
func (s *Syncer) GateWait() time.Duration {
	return max(0, time.Until(time.Unix(0, s.notBefore.Load())))
}

// gateClosed is the failure of a request not sent because the gate is
// closed. It carries the upstream's rate limit, so a caller that knows only
// ordersync.UpstreamError answers 503 with the Retry-After.
func gateClosed(op string, wait time.Duration) *OutageError {
	return &OutageError{Op: op, Cause: ErrRateLimited, Wait: wait,
		Err: &ordersync.UpstreamError{Kind: ordersync.UpstreamRateLimited, Op: op, RetryAfter: wait}}
}

// waitGate waits until the shared Retry-After has passed.
func (s *Syncer) waitGate(ctx context.Context) error {
	for {
		wait := time.Until(time.Unix(0, s.notBefore.Load()))
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for the upstream's Retry-After: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// holdUntil moves the shared gate forward to t; it never moves it back.
func (s *Syncer) holdUntil(t time.Time) {
	n := t.UnixNano()
	for {
		cur := s.notBefore.Load()
		if cur >= n || s.notBefore.CompareAndSwap(cur, n) {
			return
		}
	}
}

// breakerWait is what remains of the breaker's open period.
func (s *Syncer) breakerWait() time.Duration {
	opened := time.Unix(0, s.breakerOpenedAt.Load())
	return max(s.cfg.Retry.Initial, time.Until(opened.Add(s.cfg.Breaker.OpenFor)))
}

// admitCredentials lets a request through unless fetching is paused; while
// paused, one caller per probe interval is let through as the probe.
func (s *Syncer) admitCredentials(code string) (probe bool, err error) {
	s.cred.mu.Lock()
	defer s.cred.mu.Unlock()
	if !s.cred.paused {
		return false, nil
	}
	now := time.Now()
	if s.cred.probing || now.Before(s.cred.nextProbe) {
		wait := max(s.cfg.Retry.Initial, s.cred.nextProbe.Sub(now))
		return false, &OutageError{Op: fetchOp(code), Cause: ErrCredentialsRejected, Wait: wait}
	}
	s.cred.probing = true
	s.cred.nextProbe = now.Add(s.cfg.CredentialsProbeInterval)
	return true, nil
}

// endProbe ends a probe; accepted resumes fetching.
func (s *Syncer) endProbe(probe, accepted bool) {
	if !probe {
		return
	}
	s.cred.mu.Lock()
	defer s.cred.mu.Unlock()
	s.cred.probing = false
	if accepted && s.cred.paused {
		s.cred.paused = false
		s.metrics.credentialsRejected.Set(0)
		s.log.Info("upstream accepts the credentials again: fetching resumed")
	}
}

// rejectCredentials pauses fetching and returns the wait until the next
// probe.
func (s *Syncer) rejectCredentials(ue *ordersync.UpstreamError) time.Duration {
	s.cred.mu.Lock()
	defer s.cred.mu.Unlock()
	now := time.Now()
	s.cred.probing = false
	if !s.cred.paused {
		s.cred.paused = true
		s.cred.nextProbe = now.Add(s.cfg.CredentialsProbeInterval)
		s.metrics.credentialsRejected.Set(1)
		s.log.Error("upstream rejected the secret key: fetching paused until a probe succeeds; check the configured secret key",
			"status", ue.StatusCode, "probe_interval", s.cfg.CredentialsProbeInterval)
	}
	return max(s.cfg.Retry.Initial, s.cred.nextProbe.Sub(now))
}

// SyncOrder fetches one order and applies it to the mirror, as the CLI, the
// admin API and the reconciler do.
func (s *Syncer) SyncOrder(ctx context.Context, account, code string, cause ordersync.Cause) (ordersync.ApplyResult, error) {
	order, seq, err := s.fetch(ctx, code, fetchOptions{interactive: interactive(cause)})
	if err != nil {
		return ordersync.ApplyResult{}, err
	}
	results, err := s.apply(ctx, []ordersync.ApplyParams{{
		Account: account, Order: order, Seq: seq, FetchedAt: s.now(), Cause: cause,
	}})
	if err != nil {
		return ordersync.ApplyResult{}, fmt.Errorf("sync order %s: %w", code, err)
	}
	return results[0], nil
}

// CheckOrder is the reconciler's SyncOrder: the order is fetched with cause
// reconcile, after every other fetch waiting for the upstream, and each
// request it sends first passes admit.
func (s *Syncer) CheckOrder(ctx context.Context, account, code string, admit func(ctx context.Context) error) (ordersync.ApplyResult, error) {
	order, seq, err := s.fetch(ctx, code, fetchOptions{admit: admit})
	if err != nil {
		return ordersync.ApplyResult{}, err
	}
	results, err := s.apply(ctx, []ordersync.ApplyParams{{
		Account: account, Order: order, Seq: seq, FetchedAt: s.now(), Cause: ordersync.CauseReconcile,
	}})
	if err != nil {
		return ordersync.ApplyResult{}, fmt.Errorf("check order %s: %w", code, err)
	}
	return results[0], nil
}

// RecordDrift counts a disagreement between what the service was said to
// have done and what it answered, such as a reconcile finding a status
// change no webhook announced (kind "missed_webhook").
func (s *Syncer) RecordDrift(kind string) {
	s.metrics.drift.WithLabelValues(kind).Inc()
}

// apply writes fetched orders in one mirror transaction and counts what it
// did.
func (s *Syncer) apply(ctx context.Context, params []ordersync.ApplyParams) ([]ordersync.ApplyResult, error) {
	start := time.Now()
	results, err := s.mirror.ApplyOrders(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("apply %d orders to the mirror: %w", len(params), err)
	}
	s.metrics.mirrorCommitDuration.Observe(time.Since(start).Seconds())
	if len(results) != len(params) {
		return nil, fmt.Errorf("apply %d orders to the mirror: got %d results", len(params), len(results))
	}
	s.metrics.observeApplied(results)
	return results, nil
}
