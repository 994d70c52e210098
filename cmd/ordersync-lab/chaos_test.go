package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// TestChaos is the chaos test in its CI size: the pipeline runs as a
// separate process (the ordersync binary TestMain built) against the simulator
// with every fault on, is killed with SIGKILL once mid-run and restarted,
// and must end with a mirror identical to the simulator, exactly one PAID
// trigger per paid order on JetStream, every webhook answered 2xx in the
// event log, no unjustified dead letter, and a faulty fulfilment endpoint
// that received every PAID and every status change, signed, in each order's
// order, once per webhook-id. `ordersync-lab chaos` is the full size.
func TestChaos(t *testing.T) {
	testenv.Scenario(t, "./cmd/ordersync-lab")
	// The lab's runs spend most of their time waiting (for the
	// consumer's AckWait, the reconciler's schedule, a lease), not
	// computing: they wait side by side.
	t.Parallel()
	opts := defaultChaosOptions()
	opts.Orders, opts.Kills, opts.Seed = 300, 1, 7
	// The promise for orders active in the last hour, not less: a payment
	// whose webhook is dropped is found by the order's next check, which
	// the schedule may put up to CheckActiveInterval after its last check
	// (the 30 s this test allowed before failed a CI run). The run ends as
	// soon as the mirror matches.
	opts.ConvergeWithin = 5 * time.Minute
	// The events the killed pipeline held come back after the consumer's
	// AckWait, and the event-log check waits for them: the shortest the
	// pipeline accepts, 15 s, not the default 30 s.
	opts.AckWait = 15 * time.Second
	opts.exe = testBinary
	// Each 429 closes the pipeline's upstream gate for its Retry-After (a
	// whole second at the least), and at the full run's 5% the gate was
	// closed for most of the creation: 33–36 s of this test's 50. At 1% the
	// run still meets 429s (checked below) and creates its orders in 15–20 s;
	// the full run (`ordersync-lab chaos`) keeps 5%.
	opts.Faults.RateLimitRate = 0.01

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := runChaos(ctx, &out, opts)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("chaos test failed: %v", rep.Problems)
	}
	// The run must really have been chaotic, or it proves nothing.
	switch {
	case len(rep.Kills) != 1:
		t.Errorf("the pipeline was killed %d times, want 1", len(rep.Kills))
	case rep.ProxyFailures == 0:
		t.Errorf("no webhook delivery failed: the kill did not interrupt delivery")
	case rep.Sim.Webhooks.Dropped == 0 || rep.Sim.Webhooks.Duplicated == 0 || rep.Sim.Webhooks.Reordered == 0:
		t.Errorf("webhook faults missing: %+v", rep.Sim.Webhooks)
	case rep.PaidOrders == 0 || rep.Matching != opts.Orders+rep.Unconfirmed:
		t.Errorf("%d paid orders, %d matching of %d created (+%d unconfirmed)", rep.PaidOrders, rep.Matching, opts.Orders, rep.Unconfirmed)
	}
	if d := rep.Deliveries; !rep.DeliveriesDone || d.PaidWanted == 0 || d.Paid != d.PaidWanted || d.Injected == 0 {
		t.Errorf("deliveries: %+v, complete %v; want every PAID delivered through injected faults", d, rep.DeliveriesDone)
	}
	for _, kind := range []sim.FaultKind{sim.FaultServerError, sim.FaultRateLimit, sim.FaultHang, sim.FaultOtherProduct} {
		if rep.Sim.Faults[kind] == 0 {
			t.Errorf("the simulator injected no %s fault: %v", kind, rep.Sim.Faults)
		}
	}
}
