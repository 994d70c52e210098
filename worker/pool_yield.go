package worker

import (
	"context"
	"sync"
	"time"
)

// fetchSlots bounds the fetches (and resolutions) the pool runs at once to
// a limit that can move while they run: a fetch starts with a token and
// gives it back when done. Lowering the limit takes idle tokens out at once
// and the others as their fetches end; raising it puts tokens back.
type fetchSlots struct {
	tokens chan struct{}
	mu     sync.Mutex
	limit  int
	// out is how many tokens exist: in the channel or held by fetches.
	out int
}

func newFetchSlots(limit int) *fetchSlots {
	s := &fetchSlots{tokens: make(chan struct{}, limit)}
	s.setLimit(limit)
	return s
}

func (s *fetchSlots) acquire(ctx context.Context) error {
	select {
	case <-s.tokens:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *fetchSlots) release() {
	s.mu.Lock()
	if s.out > s.limit {
		s.out--
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.tokens <- struct{}{}
}

// setLimit sets the limit, which must be between 0 (no fetch starts) and
// the one the slots were made with.
func (s *fetchSlots) setLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
	for s.out < n {
		s.out++
		s.tokens <- struct{}{}
	}
	for s.out > n {
		select {
		case <-s.tokens:
			s.out--
		default:
			return
		}
	}
}

// Yields reports whether the pool yields the CPU to a receiver (it has a
// Pressure to read).
func (p *Pool) Yields() bool { return p.cfg.Pressure != nil }

// yieldLoop gives the CPU to the webhook receiver of this process while it
// needs it: a PressureInterval after each read it reads the receiver's
// mean publish wait again; while webhooks come at PressureMinRate or more,
// above PressureTarget it halves the fetches allowed to start, down to none;
// below a quarter of the target it raises them by a quarter. When no
// webhook came, or fewer than PressureMinRate a second, the limit goes back
// to FetchConcurrency at once: a burst of a few hundred webhooks can raise
// the wait above the target for a moment, and yielding to it would leave
// its events in the queue while the fetches came back a quarter at a time.
// In between, or above the target with no fetch left to take away, it
// holds for at most maxHeldTicks and then raises, so a wait that yielding
// cannot bring down never stops syncing. Events not fetched meanwhile wait
// in the queue. It returns with the limit back at FetchConcurrency, so a
// drain runs at full speed. docs/how-it-works.md describes the rule and
// docs/benchmarks.md its effect.
//
// While no webhook comes and the limit is full there is nothing to adjust:
// it then reads Pressure when a pull brings events (a webhook answered here
// is in the queue, and pulled, within the pull's round trip) or after
// idlePressureTicks intervals (a pool with no room pulls nothing), so an
// idle process is not woken every PressureInterval.
func (p *Pool) yieldLoop(ctx context.Context) {
	full := p.cfg.FetchConcurrency
	defer func() {
		p.slots.setLimit(full)
		p.metrics.fetchLimit.Set(float64(full))
	}()
	if p.cfg.Pressure == nil {
		return
	}
	period := p.cfg.PressureInterval
	t := time.NewTicker(period)
	defer t.Stop()
	limit, held := full, 0
	raise := func() { limit, held = min(full, limit+limit/4+1), 0 }
	read := time.Now()         // the last read of Pressure
	var pulled <-chan struct{} // p.pulled while idle, else nil
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-pulled:
		}
		wait, n := p.cfg.Pressure()
		// The first read after an idle spell comes within a pull's round
		// trip of the first webhooks, too soon to tell a burst from a
		// flood: it is taken for a flood, as the start of one needs the
		// CPU at once.
		now := time.Now()
		flood := pulled != nil || float64(n) >= p.cfg.PressureMinRate*now.Sub(read).Seconds()
		read = now
		switch idle := n == 0 && limit == full; {
		case idle && pulled == nil:
			pulled, period = p.pulled, idlePressureTicks*p.cfg.PressureInterval
		case !idle && pulled != nil:
			pulled, period = nil, p.cfg.PressureInterval
		}
		// The next read is a period after this one, not at the ticker's
		// next beat: after a read the scheduler ran late, that beat comes
		// at once, and a webhook counted over a fraction of an interval
		// would pass for a flood.
		t.Reset(period)
		switch {
		case n == 0 || !flood:
			limit, held = full, 0
		case wait > p.cfg.PressureTarget && limit > 0:
			limit, held = limit/2, 0
		case wait < p.cfg.PressureTarget/4:
			raise()
		case limit < full:
			// Held: the wait is in between, or above the target with
			// no fetch left to take away. The receiver is at or near
			// its limit, or something else (another process) keeps
			// the wait up. Either way, take a step back after
			// maxHeldTicks, so that sync goes on, slowly.
			if held++; held >= maxHeldTicks {
				raise()
			}
		}
		p.slots.setLimit(limit)
		p.metrics.fetchLimit.Set(float64(limit))
	}
}

// idlePressureTicks is how many PressureIntervals yieldLoop waits between
// reads of Pressure while idle, unless a pull wakes it first.
const idlePressureTicks = 10

// maxHeldTicks is how many PressureIntervals yieldLoop holds a lowered
// limit while the wait stays between a quarter of the target and the
// target, or above the target with the limit at none: one second at the
// default interval.
const maxHeldTicks = 20
