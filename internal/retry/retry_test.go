package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/retry"
)

func TestMain(m *testing.M) { leak.Main(m) }

// Sleep waits exactly the wait it is given, or returns the context's error
// as soon as the context ends.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := retry.Sleep(context.Background(), 3*time.Second); err != nil || time.Since(start) != 3*time.Second {
			t.Errorf("Sleep(3s) = %v after %v, want nil after 3s", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if err := retry.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Sleep(1h) with a 1s context = %v after %v, want the deadline after 1s", err, time.Since(start))
		}
	})
}

// The rules every caller's policy shares, whatever its settings: a
// schedule's last wait repeats, a growing wait stops at Max, and an
// outage is never given up.
func TestPolicyRules(t *testing.T) {
	sched := &retry.Policy{Schedule: []time.Duration{time.Second, 5 * time.Second}, MaxAttempts: 3, Exhausted: "out"}
	grow := &retry.Policy{Initial: time.Second, Multiplier: 3, Max: 10 * time.Second}
	for _, c := range []struct {
		name    string
		p       *retry.Policy
		attempt int
		want    time.Duration
	}{
		{"schedule, first", sched, 1, time.Second},
		{"schedule, last repeats", sched, 7, 5 * time.Second},
		{"growing, third", grow, 3, 9 * time.Second},
		{"growing, capped", grow, 4, 10 * time.Second},
	} {
		if got := c.p.Nominal(c.attempt); got != c.want {
			t.Errorf("%s: Nominal(%d) = %v, want %v", c.name, c.attempt, got, c.want)
		}
	}
	if d := sched.Decide(3, 0, retry.Failure{Kind: retry.Transient}); d.Retry || d.Reason != "out" {
		t.Errorf("transient at MaxAttempts: %+v, want given up as %q", d, "out")
	}
	if d := sched.Decide(300, 0, retry.Failure{Kind: retry.Outage}); !d.Retry || d.After != 5*time.Second {
		t.Errorf("outage past MaxAttempts: %+v, want a retry after 5s", d)
	}
}
