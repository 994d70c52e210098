package worker

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// The pool's and the dispatcher's policies, each built from its own
// settings, answer every kind of failure from the one retryPolicy.
func TestRetryPolicy(t *testing.T) {
	pool := PoolConfig{RetryDelay: time.Second, MaxAttempts: 3,
		UnresolvedRetryDelays: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}}
	type call struct {
		attempt int
		elapsed time.Duration
		f       failure
	}
	for _, c := range []struct {
		name   string
		policy *retryPolicy
		call   call
		// random is where in [0, 1) the spread draws.
		random float64
		want   decision
	}{
		{"pool: permanent dead-letters at once", pool.retryPolicy(),
			call{1, 0, failure{kind: failPermanent, reason: "unknown_order"}}, 0, decision{reason: "unknown_order"}},
		{"pool: transient waits RetryDelay, spread from its start", pool.retryPolicy(),
			call{1, 0, failure{kind: failTransient}}, 0, decision{retry: true, after: time.Second}},
		{"pool: transient spread to at most 1.25 RetryDelay", pool.retryPolicy(),
			call{2, 0, failure{kind: failTransient}}, 0.996, decision{retry: true, after: 1249 * time.Millisecond}},
		{"pool: an outage's expected end is spread too", pool.retryPolicy(),
			call{2, 0, failure{kind: failTransient, wait: 4 * time.Second}}, 0.5, decision{retry: true, after: 4500 * time.Millisecond}},
		{"pool: transient at MaxAttempts is exhausted", pool.retryPolicy(),
			call{3, 0, failure{kind: failTransient}}, 0, decision{reason: "retries_exhausted"}},
		{"pool: an outage never exhausts", pool.retryPolicy(),
			call{300, 0, failure{kind: failOutage, wait: 2 * time.Second}}, 0, decision{retry: true, after: 2 * time.Second}},
		{"pool: an outage of unknown end waits RetryDelay", pool.retryPolicy(),
			call{300, 0, failure{kind: failOutage}}, 0, decision{retry: true, after: time.Second}},
		{"unresolved: first delay, not spread", pool.unresolvedPolicy(),
			call{1, 0, failure{kind: failTransient}}, 0.9, decision{retry: true, after: 50 * time.Millisecond}},
		{"unresolved: last delay", pool.unresolvedPolicy(),
			call{2, 0, failure{kind: failTransient}}, 0.9, decision{retry: true, after: 100 * time.Millisecond}},
		{"unresolved: past the schedule", pool.unresolvedPolicy(),
			call{3, 0, failure{kind: failTransient}}, 0, decision{reason: string(ordersync.ReasonUnresolved)}},
		{"delivery: refused", deliveryPolicy(time.Second, time.Hour),
			call{1, 0, failure{kind: failPermanent, reason: "refused"}}, 0, decision{reason: "refused"}},
		{"delivery: first wait, spread down by half", deliveryPolicy(time.Second, time.Hour),
			call{1, 0, failure{kind: failTransient}}, 0, decision{retry: true, after: 500 * time.Millisecond}},
		{"delivery: doubling, spread up by half", deliveryPolicy(time.Second, time.Hour),
			call{3, 0, failure{kind: failTransient}}, 0.75, decision{retry: true, after: 5 * time.Second}},
		{"delivery: capped at an hour", deliveryPolicy(time.Second, 72*time.Hour),
			call{20, 0, failure{kind: failTransient}}, 0.5, decision{retry: true, after: time.Hour}},
		{"delivery: Retry-After kept as asked", deliveryPolicy(time.Second, time.Hour),
			call{5, 0, failure{kind: failTransient, wait: 7 * time.Second}}, 0, decision{retry: true, after: 7 * time.Second}},
		{"delivery: a wait ending past the window", deliveryPolicy(time.Second, time.Hour),
			call{1, time.Hour - time.Second, failure{kind: failTransient, wait: 2 * time.Second}}, 0, decision{reason: "out of retries"}},
		{"delivery: a wait ending at the window", deliveryPolicy(time.Second, time.Hour),
			call{1, time.Hour - 2*time.Second, failure{kind: failTransient, wait: 2 * time.Second}}, 0, decision{retry: true, after: 2 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.policy.random = func() float64 { return c.random }
			if got := c.policy.decide(c.call.attempt, c.call.elapsed, c.call.f); got != c.want {
				t.Errorf("decide(%d, %v, %+v) = %+v, want %+v", c.call.attempt, c.call.elapsed, c.call.f, got, c.want)
			}
		})
	}
}
