package dispatch

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/retry"
)

// The dispatcher's policy, built from its schedule and window, answers
// every kind of failure of a delivery.
func TestDeliveryPolicy(t *testing.T) {
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
		{"delivery: refused", deliveryPolicy(time.Second, time.Hour),
			call{1, 0, retry.Failure{Kind: retry.Permanent, Reason: "refused"}}, 0, retry.Decision{Reason: "refused"}},
		{"delivery: first wait, spread down by half", deliveryPolicy(time.Second, time.Hour),
			call{1, 0, retry.Failure{Kind: retry.Transient}}, 0, retry.Decision{Retry: true, After: 500 * time.Millisecond}},
		{"delivery: doubling, spread up by half", deliveryPolicy(time.Second, time.Hour),
			call{3, 0, retry.Failure{Kind: retry.Transient}}, 0.75, retry.Decision{Retry: true, After: 5 * time.Second}},
		{"delivery: capped at an hour", deliveryPolicy(time.Second, 72*time.Hour),
			call{20, 0, retry.Failure{Kind: retry.Transient}}, 0.5, retry.Decision{Retry: true, After: time.Hour}},
		{"delivery: Retry-After kept as asked", deliveryPolicy(time.Second, time.Hour),
			call{5, 0, retry.Failure{Kind: retry.Transient, Wait: 7 * time.Second}}, 0, retry.Decision{Retry: true, After: 7 * time.Second}},
		{"delivery: a wait ending past the window", deliveryPolicy(time.Second, time.Hour),
			call{1, time.Hour - time.Second, retry.Failure{Kind: retry.Transient, Wait: 2 * time.Second}}, 0, retry.Decision{Reason: "out of retries"}},
		{"delivery: a wait ending at the window", deliveryPolicy(time.Second, time.Hour),
			call{1, time.Hour - 2*time.Second, retry.Failure{Kind: retry.Transient, Wait: 2 * time.Second}}, 0, retry.Decision{Retry: true, After: 2 * time.Second}}} {
		t.Run(c.name, func(t *testing.T) {
			c.policy.Random = func() float64 { return c.random }
			if got := c.policy.Decide(c.call.attempt, c.call.elapsed, c.call.f); got != c.want {
				t.Errorf("Decide(%d, %v, %+v) = %+v, want %+v", c.call.attempt, c.call.elapsed, c.call.f, got, c.want)
			}
		})
	}
}
