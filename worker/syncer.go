package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/sony/gobreaker/v2"

	"github.com/ordersync/ordersync"
)

// Syncer fetches orders from the upstream and applies them to the mirror.
// It is safe for concurrent use; all its callers share one rate (learned
// from the upstream's 429s, under a fixed cap when one is set), one
// breaker, one Retry-After gate and one credentials pause.
type Syncer struct {
	upstream ordersync.Upstream
	mirror   ordersync.Mirror
	writer   *MirrorWriter
	cfg      SyncerConfig
	log      *slog.Logger
	now      func() time.Time
	metrics  *syncerMetrics
	rate     *upstreamRate
	breaker  *gobreaker.CircuitBreaker[fetched]

	// notBefore (unix nanoseconds) holds every request back until a
	// Retry-After has passed: a 429 holds every fetch of the account, not
	// one caller; the pool's fetches wait parked, without a fetch slot.
	notBefore atomic.Int64
	// breakerOpenedAt (unix nanoseconds) is when the breaker last opened.
	breakerOpenedAt atomic.Int64

	cred credentialsPause

	// foreground are the fetches other than the reconciler's whose
	// requests have not left yet (waiting at the Retry-After gate or the
	// rate limit, or taking their sequence): while there are any, the
	// reconciler's checks wait (see giveWay).
	foreground waitingFetches
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
	// park, when set, runs the fetch's waits at the account's Retry-After
	// gate and rate limit, so that the caller can give its place to other
	// work meanwhile (the pool: fetcher.park).
	park func(ctx context.Context, wait func(context.Context) error) error
	// leaving, when set, is called each time a request of the fetch is
	// about to leave, after every wait (the pool: its round stops taking
	// events).
	leaving func()
}

// wait runs wait through park when one is set.
func (o fetchOptions) wait(ctx context.Context, wait func(context.Context) error) error {
	if o.park == nil {
		return wait(ctx)
	}
	return o.park(ctx, wait)
}

// fetched is the result of one successful request.
type fetched struct {
	order *ordersync.Order
	seq   int64
	// sent is when the request left: the answer holds every change made
	// upstream before it (ApplyParams.FetchedAt).
	sent time.Time
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
	writer := cfg.Writer
	if writer == nil {
		if writer, err = NewMirrorWriter(MirrorWriterConfig{Mirror: cfg.Mirror, Registerer: cfg.Registerer}); err != nil {
			return nil, fmt.Errorf("new syncer: %w", err)
		}
	}
	s := &Syncer{
		writer:   writer,
		upstream: cfg.Upstream,
		mirror:   cfg.Mirror,
		cfg:      cfg,
		log:      cfg.Logger,
		now:      cfg.Clock,
		metrics:  m,
	}
	s.rate = newUpstreamRate(cfg.RequestsPerSecond, cfg.Burst, cfg.RateFloor, cfg.RateRecovery, m.rateLimit.Set)
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

// Fetch fetches the order detail of code. The returned seq was taken from
// the mirror immediately before the request that answered was sent; pass it
// to ApplyOrders so an earlier fetch never overwrites a later one.
//
// Transient failures are retried with jittered exponential backoff. Errors
// are *ordersync.UpstreamError for permanent failures (IsPermanent),
// *OutageError when the upstream is unavailable (IsOutage), or the context's
// or the mirror's error.
func (s *Syncer) Fetch(ctx context.Context, account, code string) (*ordersync.Order, int64, error) {
	res, err := s.fetch(ctx, code, fetchOptions{})
	return res.order, res.seq, err
}

func (s *Syncer) fetch(ctx context.Context, code string, opts fetchOptions) (fetched, error) {
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
		return res, nil
	}
	if isTransient(err) && !IsOutage(err) {
		err = &OutageError{Op: fetchOp(code), Cause: ErrRetriesExhausted, Wait: s.retryAfterWait(err), Err: err}
	}
	if IsOutage(err) || ordersync.UpstreamErrorKindOf(err) != "" {
		return fetched{}, err // already names the operation
	}
	return fetched{}, fmt.Errorf("%s: %w", fetchOp(code), err)
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
	// A fetch other than a check counts as waiting until its request
	// leaves, its sequence taken: a check that took the next turn sooner
	// could otherwise reach the upstream first.
	waiting := opts.admit == nil
	if waiting {
		s.foreground.enter()
	}
	leave := func() {
		if waiting {
			waiting = false
			s.foreground.leave()
		}
	}
	defer leave()
	probe, err := s.waitTurn(ctx, code, opts)
	if err != nil {
		return fetched{}, backoff.Permanent(err)
	}
	res, err := s.breaker.Execute(func() (fetched, error) {
		// The sequence is taken here, after every wait, so that the order
		// of sequences is the order in which requests leave.
		seq, err := s.writer.seqs.next(ctx, opts.leaving)
		leave()
		if err != nil {
			return fetched{}, &notUpstreamError{err}
		}
		sent, start := s.now(), time.Now()
		s.rate.leave(start)
		order, err := s.upstream.GetOrder(ctx, code)
		s.metrics.fetchDuration.Observe(time.Since(start).Seconds())
		if err != nil && ctx.Err() != nil {
			return fetched{}, &notUpstreamError{err}
		}
		s.rate.answered(start, ordersync.UpstreamErrorKindOf(err) == ordersync.UpstreamRateLimited)
		if err == nil {
			err = checkFetched(order, code)
		}
		return fetched{order: order, seq: seq, sent: sent}, err
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

// SyncOrder fetches one order and applies it to the mirror, as the CLI, the
// admin API and the reconciler do.
func (s *Syncer) SyncOrder(ctx context.Context, account, code string, cause ordersync.Cause) (ordersync.ApplyResult, error) {
	res, err := s.fetch(ctx, code, fetchOptions{interactive: interactive(cause)})
	if err != nil {
		return ordersync.ApplyResult{}, err
	}
	results, err := s.apply(ctx, []ordersync.ApplyParams{{
		Account: account, Order: res.order, Seq: res.seq, FetchedAt: res.sent, Cause: cause,
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
	res, err := s.fetch(ctx, code, fetchOptions{admit: admit})
	if err != nil {
		return ordersync.ApplyResult{}, err
	}
	results, err := s.apply(ctx, []ordersync.ApplyParams{{
		Account: account, Order: res.order, Seq: res.seq, FetchedAt: res.sent, Cause: ordersync.CauseReconcile,
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

// apply writes fetched orders through the process's MirrorWriter.
func (s *Syncer) apply(ctx context.Context, params []ordersync.ApplyParams) ([]ordersync.ApplyResult, error) {
	return s.writer.apply(ctx, params)
}
