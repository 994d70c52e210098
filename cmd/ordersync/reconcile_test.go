package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/sim"
)

// TestOneReconcilerAcrossProcesses: two reconciler processes of one
// deployment (PostgreSQL, an external NATS) share the schedule in the
// database; one holds the reconciler's lease and makes every check, the
// other makes none, and every order whose check came due is mirrored.
func TestOneReconcilerAcrossProcesses(t *testing.T) {
	// It waits out the schedule's first check (CheckFirstFetch) on the
	// wall clock, computing little: beside the other waiting test.
	t.Parallel()
	simulator, programs := startDeployment(t, 2, "reconciler", "sk-reconcile", 5)
	ctx := context.Background()
	// Orders created through ordersync are recorded, never fetched; no
	// webhook comes, so only the reconciler mirrors them, once due.
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
		codes = append(codes, res.OrderCode)
	}
	deadline := time.Now().Add(ordersync.CheckFirstFetch + 20*time.Second)
	for {
		mirrored := 0
		for _, c := range codes {
			if m, err := programs[1].DB().FindOrderByCode(ctx, ordersync.DefaultAccount, c); err == nil && m.Order.OrderStatus != "" {
				mirrored++
			}
		}
		if mirrored == orders {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d orders mirrored by the reconciler", mirrored, orders)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var checks []float64
	for _, p := range programs {
		checks = append(checks, counterValue(p.Registry(), "ordersync_reconcile_checks_total", "account", ordersync.DefaultAccount))
	}
	if (checks[0] == 0) == (checks[1] == 0) {
		t.Errorf("checks by process: %v; want every one by a single process", checks)
	}
	if got := checks[0] + checks[1]; got < orders {
		t.Errorf("%v checks for %d due orders", got, orders)
	}
	if gets := simulator.Stats().Gets; float64(gets) != checks[0]+checks[1] {
		t.Errorf("the simulator answered %d requests for %v checks", gets, checks[0]+checks[1])
	}
}

// startDeployment starts a simulator with secretKey and n processes of one
// deployment on PostgreSQL and an external NATS (skipping without them),
// each running role; they stop when the test ends.
func startDeployment(t *testing.T, n int, role, secretKey string, seed int64) (*sim.Server, []*app.Program) {
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
		p, err := app.NewProgram(context.Background(), cfg, testLogger(t).With("process", i))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(runCtx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("process %d: %v", i, err)
			}
			p.Close()
		})
		programs = append(programs, p)
	}
	return simulator, programs
}
