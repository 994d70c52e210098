package worker

// The one retry and dead-letter policy of the stages that settle failed
// work: the pool (an event whose fetch, resolution or commit failed) and the
// dispatcher (an event an endpoint did not take). Each caller classifies
// its failure; the policy answers wait this long, or dead-letter with this
// reason. What is particular to a caller stays with it: the pool decides
// that an upstream behind an open breaker or paused credentials is an
// outage, the dispatcher disables an endpoint that answered 410 Gone.

import (
	"math/rand/v2"
	"time"
)

// failureKind is what a failure means for a retry.
type failureKind int

const (
	// failTransient may pass by itself: retried within the policy's
	// budget, then dead-lettered as exhausted.
	failTransient failureKind = iota
	// failPermanent will not pass: dead-lettered at once.
	failPermanent
	// failOutage is the upstream (or the mirror) unavailable as a whole,
	// not the work at hand: retried, never dead-lettered.
	failOutage
)

// failure is one failed attempt, as its caller classified it.
type failure struct {
	kind failureKind
	// wait is what the other side asked for (a Retry-After, an outage's
	// expected end); 0 leaves the wait to the policy's backoff.
	wait time.Duration
	// reason is a permanent failure's dead-letter reason.
	reason string
}

// decision is the policy's answer: retry after a wait, or dead-letter
// with a reason.
type decision struct {
	retry  bool
	after  time.Duration
	reason string
}

// retryPolicy computes the wait before each retry and when to give up.
type retryPolicy struct {
	// schedule, when set, is the nominal wait after each attempt (the last
	// one repeats); otherwise the wait starts at initial and is multiplied
	// by multiplier after each attempt, up to max.
	schedule   []time.Duration
	initial    time.Duration
	multiplier float64
	max        time.Duration
	// Each wait is drawn from [low·d, high·d) so that retries do not come
	// back as one herd; high ≤ low leaves it as it is.
	low, high float64
	// spreadAsked spreads a wait the other side asked for as well; without
	// it such a wait is kept exactly.
	spreadAsked bool
	// maxAttempts, when set, dead-letters a transient failure of that
	// attempt or a later one.
	maxAttempts int
	// window, when set, dead-letters a transient failure whose wait would
	// end more than window after the work began.
	window time.Duration
	// exhausted is the reason of a transient failure given up.
	exhausted string
	// random draws from [0, 1); nil is math/rand.
	random func() float64
}

// decide answers for the failure of attempt (1 is the first), elapsed
// after the work began.
func (p *retryPolicy) decide(attempt int, elapsed time.Duration, f failure) decision {
	if f.kind == failPermanent {
		return decision{reason: f.reason}
	}
	if f.kind == failTransient && p.maxAttempts > 0 && attempt >= p.maxAttempts {
		return decision{reason: p.exhausted}
	}
	wait := f.wait
	if wait <= 0 || p.spreadAsked {
		if wait <= 0 {
			wait = p.nominal(attempt)
		}
		wait = p.spread(wait)
	}
	if f.kind == failTransient && p.window > 0 && elapsed+wait > p.window {
		return decision{reason: p.exhausted}
	}
	return decision{retry: true, after: wait}
}

// nominal is the wait after attempt before any spread.
func (p *retryPolicy) nominal(attempt int) time.Duration {
	attempt = max(attempt, 1)
	if len(p.schedule) > 0 {
		return p.schedule[min(attempt, len(p.schedule))-1]
	}
	wait := p.initial
	for range attempt - 1 {
		if p.max > 0 && float64(wait)*p.multiplier >= float64(p.max) {
			return p.max
		}
		wait = time.Duration(float64(wait) * p.multiplier)
	}
	return wait
}

// spread draws the wait from [low·d, high·d).
func (p *retryPolicy) spread(d time.Duration) time.Duration {
	if p.high <= p.low {
		return d
	}
	r := rand.Float64
	if p.random != nil {
		r = p.random
	}
	return time.Duration(float64(d) * (p.low + (p.high-p.low)*r()))
}
