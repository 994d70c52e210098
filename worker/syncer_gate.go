package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/ordersync/ordersync"
)

// waitingFetches counts the fetches other than the reconciler's checks that
// wait for the upstream, and tells the checks when the last one leaves.
type waitingFetches struct {
	mu sync.Mutex
	n  int64
	// left is closed when n goes back to 0; nil while n is 0.
	left chan struct{}
}

func (w *waitingFetches) enter() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		w.left = make(chan struct{})
	}
	w.n++
}

func (w *waitingFetches) leave() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n--; w.n == 0 {
		close(w.left)
		w.left = nil
	}
}

// none is nil when no fetch waits, else closed when the last one leaves.
func (w *waitingFetches) none() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.left
}

func (w *waitingFetches) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// credentialsPause stops fetching while the upstream rejects the key.
type credentialsPause struct {
	mu        sync.Mutex
	paused    bool
	probing   bool
	nextProbe time.Time
}

func (s *Syncer) breakerStateChanged(_ string, from, to gobreaker.State) {
	switch to {
	case gobreaker.StateOpen:
		s.breakerOpenedAt.Store(time.Now().UnixNano())
		s.metrics.breakerOpen.Set(1)
		if from == gobreaker.StateClosed {
			s.metrics.breakerOpens.Inc()
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

// waitTurn waits until a request may leave: past the Retry-After gate (an
// interactive fetch does not wait there) and the credentials pause, then
// the rate. A reconciler's check (opts.admit set) first passes its own
// budget and then gives way to the other fetches, which count themselves
// as waiting until their requests leave (attempt): they go first, each
// behind at most the one check that took the last turn.
func (s *Syncer) waitTurn(ctx context.Context, code string, opts fetchOptions) (probe bool, err error) {
	check := opts.admit != nil
	if check {
		if err := opts.admit(ctx); err != nil {
			return false, fmt.Errorf("wait for the reconcile budget: %w", err)
		}
	}
	if opts.interactive {
		if wait := s.GateWait(); wait > 0 {
			return false, gateClosed(fetchOp(code), wait)
		}
	} else if s.GateWait() > 0 {
		if err := opts.wait(ctx, s.waitGate); err != nil {
			return false, err
		}
	}
	if probe, err = s.admitCredentials(code); err != nil {
		return false, err
	}
	if check {
		err = s.giveWay(ctx)
	} else if err = s.rate.wait(ctx, opts.park); err != nil {
		err = fmt.Errorf("wait for the upstream rate limit: %w", err)
	}
	if err != nil {
		s.endProbe(probe, false)
		return false, err
	}
	return probe, nil
}

// CreatePaymentLink creates a link upstream at the same rate as every
// fetch, so the rate (upstream_rps, or what the 429s taught) holds for all
// that ordersync sends, and its 429s teach it too. A person waits on it:
// while the Retry-After gate is closed it is refused at once with an
// outage that says when to come back.
func (s *Syncer) CreatePaymentLink(ctx context.Context, params ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	const op = "create payment link"
	if wait := s.GateWait(); wait > 0 {
		return nil, gateClosed(op, wait)
	}
	s.foreground.enter()
	err := s.rate.wait(ctx, nil)
	s.foreground.leave()
	if err != nil {
		return nil, fmt.Errorf("%s: wait for the upstream rate limit: %w", op, err)
	}
	sent := time.Now()
	s.rate.leave(sent)
	res, err := s.upstream.CreatePaymentLink(ctx, params)
	if ctx.Err() == nil {
		s.rate.answered(sent, ordersync.UpstreamErrorKindOf(err) == ordersync.UpstreamRateLimited)
	}
	return res, err
}

// giveWay waits until no other fetch is waiting for the upstream and the
// rate has a request to spare now, and takes it: a check never takes a
// turn a webhook's fetch is queued for, and a fetch that starts waiting
// waits behind at most the one check that took the last turn. It waits for
// the last waiting fetch to leave, then for the rate's next turn.
func (s *Syncer) giveWay(ctx context.Context) error {
	for {
		if left := s.foreground.none(); left != nil {
			select {
			case <-left:
				continue
			case <-ctx.Done():
				return fmt.Errorf("give way to the other fetches: %w", ctx.Err())
			}
		}
		now := time.Now()
		if s.rate.allowAt(now) {
			return nil
		}
		if err := sleep(ctx, s.rate.untilFree(now)); err != nil {
			return fmt.Errorf("give way to the other fetches: %w", err)
		}
	}
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
