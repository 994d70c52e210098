package worker

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/retry"
)

// The pool's policies, each built from its own settings, answer every kind
// of failure from the one retry.Policy.
func TestRetryPolicy(t *testing.T) {
	pool := PoolConfig{RetryDelay: time.Second, MaxAttempts: 3,
		UnresolvedRetryDelays: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}}
	type call struct {
		attempt int
		elapsed time.Duration
		f       retry.Failure
	}
	for _, c := range []struct {
		name   string
		policy *retry.Policy
		call   call
		// random is where in [0, 1) the spread draws.
		random float64
		want   retry.Decision
	}{
		{"pool: permanent dead-letters at once", pool.retryPolicy(),
			call{1, 0, retry.Failure{Kind: retry.Permanent, Reason: "unknown_order"}}, 0, retry.Decision{Reason: "unknown_order"}},
		{"pool: transient waits RetryDelay, spread from its start", pool.retryPolicy(),
			call{1, 0, retry.Failure{Kind: retry.Transient}}, 0, retry.Decision{Retry: true, After: time.Second}},
		{"pool: transient spread to at most 1.25 RetryDelay", pool.retryPolicy(),
			call{2, 0, retry.Failure{Kind: retry.Transient}}, 0.996, retry.Decision{Retry: true, After: 1249 * time.Millisecond}},
		{"pool: an outage's expected end is spread too", pool.retryPolicy(),
			call{2, 0, retry.Failure{Kind: retry.Transient, Wait: 4 * time.Second}}, 0.5, retry.Decision{Retry: true, After: 4500 * time.Millisecond}},
		{"pool: transient at MaxAttempts is exhausted", pool.retryPolicy(),
			call{3, 0, retry.Failure{Kind: retry.Transient}}, 0, retry.Decision{Reason: "retries_exhausted"}},
		{"pool: an outage never exhausts", pool.retryPolicy(),
			call{300, 0, retry.Failure{Kind: retry.Outage, Wait: 2 * time.Second}}, 0, retry.Decision{Retry: true, After: 2 * time.Second}},
		{"pool: an outage of unknown end waits RetryDelay", pool.retryPolicy(),
			call{300, 0, retry.Failure{Kind: retry.Outage}}, 0, retry.Decision{Retry: true, After: time.Second}},
		{"unresolved: first delay, not spread", pool.unresolvedPolicy(),
			call{1, 0, retry.Failure{Kind: retry.Transient}}, 0.9, retry.Decision{Retry: true, After: 50 * time.Millisecond}},
		{"unresolved: last delay", pool.unresolvedPolicy(),
			call{2, 0, retry.Failure{Kind: retry.Transient}}, 0.9, retry.Decision{Retry: true, After: 100 * time.Millisecond}},
		{"unresolved: past the schedule", pool.unresolvedPolicy(),
			call{3, 0, retry.Failure{Kind: retry.Transient}}, 0, retry.Decision{Reason: string(ordersync.ReasonUnresolved)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.policy.Random = func() float64 { return c.random }
			if got := c.policy.Decide(c.call.attempt, c.call.elapsed, c.call.f); got != c.want {
				t.Errorf("decide(%d, %v, %+v) = %+v, want %+v", c.call.attempt, c.call.elapsed, c.call.f, got, c.want)
			}
		})
	}
}
