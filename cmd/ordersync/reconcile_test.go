package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// TestOneReconcilerAcrossProcesses: two reconciler processes of one
// deployment (PostgreSQL, an external NATS) share the schedule in the
// database; one holds the reconciler's lease and makes every check, the
// other makes none, and every order whose check came due is mirrored.
func TestOneReconcilerAcrossProcesses(t *testing.T) {
	// It waits on the reconcilers' leases and claims, computing little:
	// beside the other waiting tests.
	t.Parallel()
	// A budget that checks the orders in a second, not five: how many
	// checks a second is the budget's own test (worker).
	simulator, programs := newDeployment(t, 2, "reconciler", "sk-reconcile", 5, func(c *app.Config) { c.ReconcileRPS = 50 })
	ctx := context.Background()
	// Orders created through ordersync are recorded, never fetched; no
	// webhook comes, so only the reconciler mirrors them, once due. They
	// are recorded before the processes run, and each made due at once
	// (PullCheck, as evidence of a lost webhook does) rather than
	// CheckFirstFetch after its recording, which the schedule's own tests
	// hold: this test is about who checks, not when.
	const orders = 30
	var codes []string
	for range orders {
		amount := ordersync.MustAmount("3.50")
		res, err := simulator.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount})
		if err != nil {
			t.Fatal(err)
		}
		if err := programs[0].DB().RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: res.OrderCode, ID: res.OrderID}); err != nil {
			t.Fatal(err)
		}
		if err := programs[0].DB().PullCheck(ctx, ordersync.DefaultAccount, res.OrderCode, time.Now()); err != nil {
			t.Fatal(err)
		}
		codes = append(codes, res.OrderCode)
	}
	runDeployment(t, programs)
	testenv.Await(t, 30*time.Second, 200*time.Millisecond, func() error {
		mirrored := 0
		for _, c := range codes {
			if m, err := programs[1].DB().FindOrderByCode(ctx, ordersync.DefaultAccount, c); err == nil && m.Order.OrderStatus != "" {
				mirrored++
			}
		}
		if mirrored != orders {
			return fmt.Errorf("%d of %d orders mirrored by the reconciler", mirrored, orders)
		}
		return nil
	})
	// The leader goes on checking (the start tightens the schedule, so
	// the orders come due again soon): the counts below are of a running
	// process. The standby's must be 0 and stay so, whenever read; the
	// simulator's count and the leader's are not compared, since a check
	// whose request the simulator has counted may not have counted itself
	// yet.
	var checks, requests []float64
	for _, p := range programs {
		checks = append(checks, counterValue(p.Registry(), "ordersync_reconcile_checks_total", "account", ordersync.DefaultAccount))
		sum := 0.0
		for _, m := range family(p.Registry(), "ordersync_fetch_requests_total") {
			sum += m.GetCounter().GetValue()
		}
		requests = append(requests, sum)
	}
	if (checks[0] == 0) == (checks[1] == 0) {
		t.Errorf("checks by process: %v; want every one by a single process", checks)
	}
	if (requests[0] == 0) == (requests[1] == 0) {
		t.Errorf("upstream requests by process: %v; want every one by the process that checks", requests)
	}
	if got := checks[0] + checks[1]; got < orders {
		t.Errorf("%v checks for %d due orders", got, orders)
	}
	if gets := simulator.Stats().Gets; float64(gets) < requests[0]+requests[1] {
		t.Errorf("the simulator answered %d requests, the processes counted %v", gets, requests[0]+requests[1])
	}
}

// startDeployment starts a simulator with secretKey and n processes of one
// deployment on PostgreSQL and an external NATS (skipping without them),
// each running role; they stop when the test ends.
func startDeployment(t *testing.T, n int, role, secretKey string, seed int64) (*sim.Server, []*app.Program) {
	t.Helper()
	simulator, programs := newDeployment(t, n, role, secretKey, seed, nil)
	runDeployment(t, programs)
	return simulator, programs
}

// newDeployment is startDeployment's simulator and processes, each
// configured by configure (when not nil), built and migrated but not run.
func newDeployment(t *testing.T, n int, role, secretKey string, seed int64, configure func(*app.Config)) (*sim.Server, []*app.Program) {
	t.Helper()
	dbURL, natsURL, ns := externalServices(t)
	simulator, err := sim.New(sim.Config{SecretKey: secretKey, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { simulator.Close() })
	simURL, err := simulator.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var programs []*app.Program
	for i := range n {
		cfg := app.DefaultConfig()
		cfg.APIBaseURL, cfg.SecretKey, cfg.WebhookSecrets = simURL, secretKey, []string{"whsec"}
		cfg.DataDir = filepath.Join(t.TempDir(), "p")
		cfg.DatabaseURL, cfg.NATSURL, cfg.NATSNamespace = dbURL, natsURL, ns
		cfg.Role, cfg.Listen, cfg.AdminListen = role, "127.0.0.1:0", "127.0.0.1:0"
		cfg.ShutdownDrain = 0
		if configure != nil {
			configure(&cfg)
		}
		p, err := app.NewProgram(context.Background(), cfg, testLogger(t).With("process", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		programs = append(programs, p)
	}
	return simulator, programs
}

// runDeployment runs newDeployment's processes until the test ends.
func runDeployment(t *testing.T, programs []*app.Program) {
	t.Helper()
	for i, p := range programs {
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(runCtx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("process %d: %v", i, err)
			}
		})
	}
}
