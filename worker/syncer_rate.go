package worker

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The upstream's limit is unknown; a 429 is the only signal. upstreamRate
// learns it: every request of an account in a process waits for it, so a
// limit the 429s reveal holds for webhook-driven fetches, checks and link
// creation alike.

const (
	// rateWindow is how far back the answers that decide a lowering go.
	rateWindow = time.Second
	// rateRefusedShare is the share of the window's answers that must be
	// 429s (and at least rateRefusedMin of them) for the rate to be
	// lowered: a limit refuses every request above it, while a stray 429
	// among many accepted requests says nothing about the rate. Four at
	// least, so that a service answering a few percent of its requests 429
	// at random (a busy moment on its side) does not ratchet the rate down
	// a second at a time at a few requests a second; the Retry-After gate
	// still holds every request after each 429.
	rateRefusedShare = 0.25
	rateRefusedMin   = 4
	// DefaultRateFloor is the lowest rate the 429s can push the requests
	// down to, in requests per second.
	DefaultRateFloor = 1.0
	// DefaultRateRecovery is how long the rate takes to climb back, step
	// by step, from a lowering to the rate the 429s met; the lowered limit
	// is lifted then.
	DefaultRateRecovery = time.Minute
)

// upstreamRate is the rate requests leave at: the fixed cap when one is
// set, else none, and below either while the upstream's 429s say so.
type upstreamRate struct {
	// ceiling is the fixed cap (upstream_rps); +Inf when there is none.
	ceiling  float64
	burst    int
	floor    float64
	recovery time.Duration
	gauge    func(float64)

	limiter *rate.Limiter

	mu sync.Mutex
	// sent are when the requests of the last rateWindow left; answers
	// are the answers of the last rateWindow to requests sent after the
	// last lowering.
	sent    []time.Time
	answers []rateAnswer
	// loweredAt is when the rate was last lowered; zero when it is not.
	// The limit climbs from low at loweredAt to high over recovery.
	loweredAt time.Time
	low, high float64
}

type rateAnswer struct {
	at      time.Time
	refused bool
}

func newUpstreamRate(ceiling float64, burst int, floor float64, recovery time.Duration, gauge func(float64)) *upstreamRate {
	if ceiling <= 0 {
		ceiling = math.Inf(1)
	}
	r := &upstreamRate{ceiling: ceiling, burst: burst, floor: floor, recovery: recovery, gauge: gauge}
	r.limiter = rate.NewLimiter(limitOf(ceiling), max(1, burst))
	r.gauge(gaugeOf(ceiling))
	return r
}

func limitOf(perSecond float64) rate.Limit {
	if math.IsInf(perSecond, 1) {
		return rate.Inf
	}
	return rate.Limit(perSecond)
}

// gaugeOf is the limit as ordersync_upstream_rate_limit_rps shows it: 0
// for none.
func gaugeOf(perSecond float64) float64 {
	if math.IsInf(perSecond, 1) {
		return 0
	}
	return perSecond
}

// wait waits for a request's turn: the fetches other than checks, and link
// creation, take turns in the order they ask. A turn that is not free now
// is waited for through park, when set (fetchOptions.wait).
func (r *upstreamRate) wait(ctx context.Context, park func(context.Context, func(context.Context) error) error) error {
	r.recover(time.Now())
	if park == nil {
		return r.limiter.Wait(ctx)
	}
	res := r.limiter.Reserve()
	if !res.OK() {
		return r.limiter.Wait(ctx)
	}
	d := res.Delay()
	if d == 0 {
		return nil
	}
	if err := park(ctx, func(ctx context.Context) error { return sleep(ctx, d) }); err != nil {
		res.Cancel()
		return err
	}
	return nil
}

// allowAt takes a turn if one is free at now: a check never waits in the
// queue that the other fetches wait in.
func (r *upstreamRate) allowAt(now time.Time) bool {
	r.recover(now)
	return r.limiter.AllowN(now, 1)
}

// untilFree is how long after now the next turn is free at the limit in
// use, at least a millisecond: a limit that recovers meanwhile frees it
// sooner, and the caller asks again then.
func (r *upstreamRate) untilFree(now time.Time) time.Duration {
	l := r.limiter.Limit()
	if l == rate.Inf || l <= 0 {
		return time.Millisecond
	}
	missing := 1 - r.limiter.TokensAt(now)
	return max(time.Millisecond, time.Duration(math.Ceil(missing/float64(l)*float64(time.Second))))
}

// limit is the rate in use; +Inf for none.
func (r *upstreamRate) limit() float64 {
	r.recover(time.Now())
	if l := r.limiter.Limit(); l != rate.Inf {
		return float64(l)
	}
	return math.Inf(1)
}

// recover moves a lowered limit one step nearer to where the 429s found
// it, and lifts it once recovery has passed without another lowering.
func (r *upstreamRate) recover(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loweredAt.IsZero() {
		return
	}
	elapsed := now.Sub(r.loweredAt)
	limit := r.ceiling
	if elapsed < r.recovery {
		limit = min(r.ceiling, r.low+(r.high-r.low)*elapsed.Seconds()/r.recovery.Seconds())
	} else {
		r.loweredAt = time.Time{}
		r.answers = nil
	}
	r.setLimit(now, limit)
}

// setLimit sets the limiter's limit; r.mu is held.
func (r *upstreamRate) setLimit(now time.Time, limit float64) {
	if limitOf(limit) == r.limiter.Limit() {
		return
	}
	burst := r.burst
	if limit < r.ceiling {
		// Below the cap the requests leave evenly, a tenth of a second's
		// worth at a time.
		burst = max(1, int(math.Ceil(limit/10)))
	}
	r.limiter.SetLimitAt(now, limitOf(limit))
	r.limiter.SetBurstAt(now, max(1, burst))
	r.gauge(gaugeOf(limit))
}

// leave notes a request leaving at now.
func (r *upstreamRate) leave(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cut := 0
	for cut < len(r.sent) && now.Sub(r.sent[cut]) > rateWindow {
		cut++
	}
	r.sent = append(r.sent[cut:], now)
}

// answered takes the upstream's answer to a request sent at sent: a 429
// (refused) or anything else. When the window's 429s show a limit, the
// rate is lowered to half of what the window sent, at least the floor. A
// request sent before the last lowering says nothing of the lowered rate,
// so a burst of 429s to requests sent together lowers it once.
// sent is as passed to leave.
func (r *upstreamRate) answered(sent time.Time, refused bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sent.Before(r.loweredAt) {
		return
	}
	cut := 0
	for cut < len(r.answers) && now.Sub(r.answers[cut].at) > rateWindow {
		cut++
	}
	r.answers = append(r.answers[cut:], rateAnswer{at: now, refused: refused})
	if !refused {
		return
	}
	n := 0
	for _, a := range r.answers {
		if a.refused {
			n++
		}
	}
	if n < rateRefusedMin || float64(n) < rateRefusedShare*float64(len(r.answers)) {
		return
	}
	current := math.Inf(1)
	if l := r.limiter.Limit(); l != rate.Inf {
		current = float64(l)
	}
	left := 0
	for _, at := range r.sent {
		if now.Sub(at) <= rateWindow {
			left++
		}
	}
	sentRate := float64(max(left, len(r.answers))) / rateWindow.Seconds()
	r.high = max(r.floor, min(current, sentRate))
	r.low = max(r.floor, r.high/2)
	r.loweredAt = now
	r.answers = nil
	r.setLimit(now, r.low)
}
