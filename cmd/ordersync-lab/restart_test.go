package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/testenv"
)

// TestRestart is the rolling restart in its CI size: 300 orders under the
// chaos run's faults but dropped webhooks, the pipeline stopped with
// SIGTERM twice and started again behind a probe every 250 ms with a 1 s
// drain. No webhook sent while the probe said ready is refused, each stop
// exits 0, and the chaos run's checks pass.
func TestRestart(t *testing.T) {
	testenv.Scenario(t, "./cmd/ordersync-lab")
	t.Parallel()
	opts := defaultRestartOptions()
	opts.chaos.Orders, opts.chaos.Seed, opts.Restarts = 300, 11, 2
	opts.Drain, opts.ProbeEvery = time.Second, 250*time.Millisecond
	// As TestChaos: the promise for recently active orders, fewer 429s.
	opts.chaos.ConvergeWithin, opts.chaos.AckWait = 5*time.Minute, 15*time.Second
	opts.chaos.Faults.RateLimitRate = 0.01
	// No dropped webhooks: only the reconciler's schedule finds their
	// orders, which took 50 of the test's 75 s after the faults stopped,
	// and TestChaos holds that under kills. Every webhook the balancer
	// forwarded or held back still has to end in the mirror.
	opts.chaos.Faults.DropRate = 0
	opts.chaos.exe = testBinary

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := runRestart(ctx, &out, opts)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("restart test failed: %v %v", rep.Problems, rep.extraProblems)
	}
	// The restarts must have met webhooks in flight, or they prove
	// nothing: the balancer held some back while the pipeline was not
	// ready.
	switch {
	case len(rep.Stops) != 2 || len(rep.Unready) < 2:
		t.Errorf("%d stops, %d unready spells, want 2 and at least 2", len(rep.Stops), len(rep.Unready))
	case rep.HeldBack == 0:
		t.Error("no webhook arrived while the pipeline was not ready: the restarts met no load")
	case rep.PaidOrders == 0 || rep.Matching != opts.chaos.Orders+rep.Unconfirmed:
		t.Errorf("%d paid orders, %d matching of %d created (+%d unconfirmed)", rep.PaidOrders, rep.Matching, opts.chaos.Orders, rep.Unconfirmed)
	}
}
