package app

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// TestLeaderRetryJittered: processes that lost NATS together must not
// campaign for a lease in step when it returns, so the first waits of
// fresh schedules differ; the waits grow to a cap and never stop.
func TestLeaderRetryJittered(t *testing.T) {
	firsts := map[time.Duration]bool{}
	for range 20 {
		b := leaderRetry()
		first := b.NextBackOff()
		if first < 500*time.Millisecond || first > 1500*time.Millisecond {
			t.Fatalf("first wait %v, want 1s ± 50%%", first)
		}
		firsts[first] = true
		for range 50 {
			d := b.NextBackOff()
			if d == backoff.Stop {
				t.Fatal("the schedule gave up; only the context may end it")
			}
			if d > 45*time.Second {
				t.Fatalf("wait %v, want at most 30s + 50%%", d)
			}
		}
	}
	if len(firsts) < 10 {
		t.Errorf("20 schedules began with %d distinct waits: not jittered", len(firsts))
	}
}
