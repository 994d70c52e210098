package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/sim"
)

func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	if os.Getenv("ORDERSYNC_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func startTestStack(t *testing.T, opts app.StackOptions) *app.Stack {
	t.Helper()
	if opts.DataDir == "" {
		// A data directory of the test's own starts with its mirror
		// migrated (a copy of a template); one the test gives is left as
		// it is, for tests of what serve makes of a directory.
		opts.DataDir = t.TempDir()
		testdb.SQLiteFile(t, datadir.DatabaseFile(opts.DataDir))
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	st, err := app.StartStack(context.Background(), opts)
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close stack: %v", err)
		}
	})
	return st
}

// metricsPage returns the stack's /metrics page.
func metricsPage(t *testing.T, st *app.Stack) string {
	t.Helper()
	resp, err := http.Get(st.Program.AdminURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// waitMirrorMatches waits until every simulator order is in the mirror and
// identical field by field, and fails with the differences otherwise.
// While the pipeline catches up a poll costs a query: the orders (the
// simulator's list only grows) are checked in turn from the first that
// did not match yet. Once each matched, one pass over all of them must
// find no difference.
func waitMirrorMatches(t *testing.T, st *app.Stack, timeout time.Duration) {
	t.Helper()
	next := 0
	testenv.Await(t, timeout, 100*time.Millisecond, func() error {
		orders := st.Sim.Orders()
		for ; next < len(orders); next++ {
			if problems := mirrorDiff(st, &orders[next]); len(problems) > 0 {
				return fmt.Errorf("mirror does not match the simulator: %d of %d orders matched in turn, then: %s", next, len(orders), strings.Join(problems, "\n"))
			}
		}
		var problems []string
		for i := range orders {
			problems = append(problems, mirrorDiff(st, &orders[i])...)
		}
		if len(problems) == 0 {
			return nil
		}
		next = 0
		return fmt.Errorf("mirror does not match the simulator (%d problems), first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "\n"))
	})
}

// mirrorDiff is how the mirror's copy of the simulator's order want
// differs from it, or its absence.
func mirrorDiff(st *app.Stack, want *ordersync.Order) []string {
	got, err := st.Program.DB().FindOrderByCode(context.Background(), ordersync.DefaultAccount, want.OrderCode)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", want.OrderCode, err)}
	}
	var problems []string
	for _, d := range ordersync.DiffOrders(want, &got.Order) {
		problems = append(problems, want.OrderCode+": "+d)
	}
	return problems
}

// requireOutboxSent waits until the outbox holds no unsent message, and
// fails the test if timeout passes first.
func requireOutboxSent(t *testing.T, st *app.Stack, timeout time.Duration) {
	t.Helper()
	sent, err := waitOutboxSent(context.Background(), st.Program.DB(), timeout)
	if err != nil {
		t.Fatal(err)
	}
	if !sent {
		t.Fatalf("the outbox still holds unsent messages after %s", timeout)
	}
}

// TestEndToEnd drives real webhooks from the simulator through the receiver,
// JetStream and the workers into SQLite, with events for other products and
// subscriptions mixed in, and holds every mirrored order against the
// simulator's truth. The simulator's webhooks carry only orderId, as a
// string: resolving them depends on ordersync having recorded the orders it
// created.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{
		Seed:   7,
		Faults: sim.Faults{DuplicateRate: 0.2, ReorderRate: 0.2, ReorderDelay: 100 * time.Millisecond, OtherProductRate: 0.2, SubscriptionRate: 0.1},
	})
	rng := rand.New(rand.NewPCG(7, 7))
	codes, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 60, rng)
	if err != nil {
		t.Fatal(err)
	}
	acts := st.Sim.ActAsBuyers(codes, rng)
	if acts.Paid == 0 || acts.Cancelled == 0 || acts.Finalized == 0 {
		t.Fatalf("buyers did too little to test anything: %+v", acts)
	}
	waitMirrorMatches(t, st, 20*time.Second)
	if err := st.Sim.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}

	stats := st.Sim.Stats()
	if stats.Faults[sim.FaultOtherProduct] == 0 || stats.Faults[sim.FaultSubscription] == 0 {
		t.Fatalf("the simulator sent no other-product or subscription events: %+v", stats.Faults)
	}
	reg := st.Program.Registry()
	if got := counterValue(reg, "ordersync_webhook_requests_total", "outcome", "ignored"); got == 0 {
		t.Errorf("no webhook was answered as ignored")
	}
	if got := counterValue(reg, "ordersync_deadletters_total", "reason", "unresolved"); got != 0 {
		t.Errorf("%v events dead-lettered as unresolved: other-product events must be ignored, not followed", got)
	}

	// Every PAID or FINALIZED order fired the PAID trigger exactly once.
	requireOutboxSent(t, st, 10*time.Second)
	triggers, err := st.Program.CountPaidTriggers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range st.Sim.Orders() {
		n := triggers[o.OrderCode]
		if n > 1 || (o.OrderStatus.IsPaidState() && n != 1) {
			t.Errorf("order %s (%s): %d PAID triggers", o.OrderCode, o.OrderStatus, n)
		}
	}

	// The back office reads the same through the admin API.
	code := codes[0]
	resp, err := http.Get(st.Program.AdminURL() + "/v1/orders/" + code)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET order: %d %s", resp.StatusCode, body)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"orderId", "orderCode", "lineItems", "orderStatus", "totalDetails", "store", "payment", "created", "sync"} {
		if _, ok := doc[field]; !ok {
			t.Errorf("order JSON lacks %q: %s", field, body)
		}
	}
}

// TestCreatePaymentLinkValidation: the admin API refuses a bad request with
// the offending fields named, before anything reaches the service.
func TestCreatePaymentLinkValidation(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{})
	body := `{"amount": 10, "lineItems": [{"quantity": 0, "product": {"name": ""}}], "orderReference": "` + strings.Repeat("x", 256) + `"}`
	resp, err := http.Post(st.Program.AdminURL()+"/v1/payment-links", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		Status int                 `json:"status"`
		Errors map[string][]string `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || p.Status != 400 {
		t.Fatalf("want 400, got %d", resp.StatusCode)
	}
	for _, f := range []string{"lineItems", "amount", "lineItems[0].quantity", "lineItems[0].product.name", "lineItems[0].product.price", "orderReference"} {
		if _, ok := p.Errors[f]; !ok {
			t.Errorf("field %s not named in %v", f, p.Errors)
		}
	}
	if n := st.Sim.Stats().Checkouts; n != 0 {
		t.Errorf("an invalid request reached the service: %d checkouts", n)
	}
}
