package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// externalURLs returns the PostgreSQL and NATS servers of this machine, or
// skips.
func externalURLs(tb testing.TB) (databaseURL, natsURL string) {
	tb.Helper()
	pg, nats := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"), os.Getenv("ORDERSYNC_TEST_NATS_URL")
	if pg == "" || nats == "" {
		tb.Skip("set ORDERSYNC_TEST_POSTGRES_URL and ORDERSYNC_TEST_NATS_URL to run the multi-process tests against PostgreSQL and an external NATS")
	}
	return pg, nats
}

// TestMultiProcess is the chaos scenario as a scale-out deployment, in its
// CI size: 2 receivers behind a round-robin balancer, 3 workers, 2 relays
// and a reconciler, each a separate process (the ordersync binary
// TestMain built) on the external NATS and PostgreSQL. A worker and then the
// relay leader are killed with SIGKILL mid-run and restarted; the standby
// relay must take the lease over. The run must end with the chaos test's
// guarantees: a mirror identical to the simulator, one PAID trigger per
// paid order, every webhook answered 2xx in the event log, no unjustified
// dead letter. `ordersync-lab multiproc` is the full size.
func TestMultiProcess(t *testing.T) {
	testenv.Scenario(t, "./cmd/ordersync-lab")
	// The lab's runs spend most of their time waiting (for the
	// consumer's AckWait, the reconciler's schedule, a lease), not
	// computing: they wait side by side.
	t.Parallel()
	pg, natsURL := externalURLs(t)
	opts := defaultMultiprocOptions()
	opts.NATSURL, opts.DatabaseURL = natsURL, pg
	opts.Chaos.Orders, opts.Chaos.Seed = 300, 11
	// A killed worker's unacknowledged events come back after the
	// consumer's AckWait: the promise covers it. The shortest the pipeline
	// accepts, 15 s, not the default 30 s: the run waits for them.
	opts.Chaos.ConvergeWithin = 50 * time.Second
	opts.Chaos.AckWait = 15 * time.Second
	opts.Chaos.exe = testBinary

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := runMultiproc(ctx, &out, opts)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("multi-process test failed: %v", rep.Problems)
	}
	// The run must really have been chaotic and spread, or it proves nothing.
	switch {
	case len(rep.Kills) != 2 || rep.KilledWorker == "" || rep.KilledLeader == "":
		t.Errorf("kills: %v (worker %q, relay leader %q), want a worker and the relay leader", rep.Kills, rep.KilledWorker, rep.KilledLeader)
	case rep.NewLeader == "" || rep.Failover > 3*opts.LeaderTTL:
		t.Errorf("relay failover to %q took %s (lease %s)", rep.NewLeader, rep.Failover, opts.LeaderTTL)
	case rep.Sim.Webhooks.Dropped == 0 || rep.Sim.Webhooks.Duplicated == 0 || rep.Sim.Webhooks.Reordered == 0:
		t.Errorf("webhook faults missing: %+v", rep.Sim.Webhooks)
	case rep.PaidOrders == 0 || rep.Matching != opts.Chaos.Orders+rep.Unconfirmed:
		t.Errorf("%d paid orders, %d matching of %d created (+%d unconfirmed)", rep.PaidOrders, rep.Matching, opts.Chaos.Orders, rep.Unconfirmed)
	case len(rep.WorkerFetches) != 3:
		t.Errorf("fetches of %d worker processes, want 3: %v", len(rep.WorkerFetches), rep.WorkerFetches)
	}
	for _, kind := range []sim.FaultKind{sim.FaultServerError, sim.FaultRateLimit, sim.FaultHang, sim.FaultOtherProduct} {
		if rep.Sim.Faults[kind] == 0 {
			t.Errorf("the simulator injected no %s fault: %v", kind, rep.Sim.Faults)
		}
	}
}

// BenchmarkWorkerProcesses compares 1 and 3 worker processes (64 fetches
// in flight each) on the external NATS and PostgreSQL against the
// simulator with 50 ms GET latency: b.N orders with one Created webhook
// each, posted to a receiver process, until the mirror holds them all.
// Each sub-benchmark starts a fresh deployment; run it with a fixed count:
//
//	go test -run '^$' -bench BenchmarkWorkerProcesses -benchtime 3000x ./cmd/ordersync-lab
func BenchmarkWorkerProcesses(b *testing.B) {
	pg, natsURL := externalURLs(b)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("processes=%d", n), func(b *testing.B) {
			res, err := runWorkerScaling(context.Background(), io.Discard, scalingOptions{
				Orders: b.N, ProcessCounts: []int{n}, NATSURL: natsURL, DatabaseURL: pg,
				exe: testBinary,
			})
			if err != nil {
				b.Fatal(err)
			}
			r := res[0]
			for i, f := range r.PerProcess {
				if f == 0 && b.N >= 100*n {
					b.Errorf("worker process %d of %d fetched nothing", i+1, n)
				}
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.Rate, "orders/s")
			b.ReportMetric(r.FetchesPerOrder, "fetches/order")
		})
	}
}
