// Package retry is the one retry and dead-letter policy of the stages that
// settle failed work: the worker's pool (an event whose fetch, resolution or
// commit failed) and the dispatcher (an event an endpoint did not take),
// and of the tracing exporter's posts to a collector. Each caller classifies its failure; the policy answers wait this long, or
// dead-letter with this reason. What is particular to a caller stays with
// it: the pool decides that an upstream behind an open breaker or paused
// credentials is an outage, the dispatcher disables an endpoint that
// answered 410 Gone.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Kind is what a failure means for a retry.
type Kind int

const (
	// Transient may pass by itself: retried within the policy's budget,
	// then dead-lettered as exhausted.
	Transient Kind = iota
	// Permanent will not pass: dead-lettered at once.
	Permanent
	// Outage is the upstream (or the mirror) unavailable as a whole, not
	// the work at hand: retried, never dead-lettered.
	Outage
)

// Failure is one failed attempt, as its caller classified it.
type Failure struct {
	Kind Kind
	// Wait is what the other side asked for (a Retry-After, an outage's
	// expected end); 0 leaves the wait to the policy's backoff.
	Wait time.Duration
	// Reason is a permanent failure's dead-letter reason.
	Reason string
}

// Decision is the policy's answer: retry after a wait, or dead-letter
// with a reason.
type Decision struct {
	Retry  bool
	After  time.Duration
	Reason string
}

// Policy computes the wait before each retry and when to give up.
type Policy struct {
	// Schedule, when set, is the nominal wait after each attempt (the last
	// one repeats); otherwise the wait starts at Initial and is multiplied
	// by Multiplier after each attempt, up to Max.
	Schedule   []time.Duration
	Initial    time.Duration
	Multiplier float64
	Max        time.Duration
	// Each wait is drawn from [Low·d, High·d) so that retries do not come
	// back as one herd; High ≤ Low leaves it as it is.
	Low, High float64
	// SpreadAsked spreads a wait the other side asked for as well; without
	// it such a wait is kept exactly.
	SpreadAsked bool
	// MaxAttempts, when set, dead-letters a transient failure of that
	// attempt or a later one.
	MaxAttempts int
	// Window, when set, dead-letters a transient failure whose wait would
	// end more than Window after the work began.
	Window time.Duration
	// Exhausted is the reason of a transient failure given up.
	Exhausted string
	// Random draws from [0, 1); nil is math/rand.
	Random func() float64
}

// Decide answers for the failure of attempt (1 is the first), elapsed
// after the work began.
func (p *Policy) Decide(attempt int, elapsed time.Duration, f Failure) Decision {
	if f.Kind == Permanent {
		return Decision{Reason: f.Reason}
	}
	if f.Kind == Transient && p.MaxAttempts > 0 && attempt >= p.MaxAttempts {
		return Decision{Reason: p.Exhausted}
	}
	wait := f.Wait
	if wait <= 0 || p.SpreadAsked {
		if wait <= 0 {
			wait = p.Nominal(attempt)
		}
		wait = p.spread(wait)
	}
	if f.Kind == Transient && p.Window > 0 && elapsed+wait > p.Window {
		return Decision{Reason: p.Exhausted}
	}
	return Decision{Retry: true, After: wait}
}

// Nominal is the wait after attempt before any spread.
func (p *Policy) Nominal(attempt int) time.Duration {
	attempt = max(attempt, 1)
	if len(p.Schedule) > 0 {
		return p.Schedule[min(attempt, len(p.Schedule))-1]
	}
	wait := p.Initial
	for range attempt - 1 {
		if p.Max > 0 && float64(wait)*p.Multiplier >= float64(p.Max) {
			return p.Max
		}
		wait = time.Duration(float64(wait) * p.Multiplier)
	}
	return wait
}

// spread draws the wait from [Low·d, High·d).
func (p *Policy) spread(d time.Duration) time.Duration {
	if p.High <= p.Low {
		return d
	}
	r := rand.Float64
	if p.Random != nil {
		r = p.Random
	}
	return time.Duration(float64(d) * (p.Low + (p.High-p.Low)*r()))
}

// Sleep waits d, the wait a Decision asked for, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
