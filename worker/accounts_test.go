package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestAccounts: two merchant accounts, each with its own service and key,
// share one queue and one mirror. Each account's events are fetched from
// its own service and mirrored under its name; an event of an account the
// deployment does not serve is dead-lettered, not retried.
func TestAccounts(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	ctx := context.Background()

	other, err := sim.New(sim.Config{SecretKey: "sk_acme", Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	otherURL, err := other.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acme := e.newSyncer(t, newClient(t, otherURL, "sk_acme"), func(c *worker.SyncerConfig) {
		c.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"account": "acme"}, e.reg)
	})
	// Every account's collectors carry its name, the default's too: one
	// metric family has one set of label names.
	def := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"account": ordersync.DefaultAccount}, e.reg)
	})

	mine := e.createOrders(t, 1)[0]
	amount := ordersync.MustAmount("7.25")
	theirs, err := other.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount, OrderReference: "acme-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "acme", Code: theirs.OrderCode, ID: theirs.OrderID}); err != nil {
		t.Fatal(err)
	}

	evMine := e.webhook(mine.OrderID, ordersync.EventCreated)
	evTheirs := e.webhook(theirs.OrderID, ordersync.EventCreated)
	evTheirs.Account = "acme"
	evGhost := e.event([]byte(`{"orderCode":"GHOST01","orderType":"FASTLINK_CHARGE","type":"Created"}`))
	evGhost.Account = "ghost"
	e.publish(t, evMine, evTheirs, evGhost)
	e.startPool(t, def, func(c *worker.PoolConfig) {
		c.Accounts = worker.Accounts{ordersync.DefaultAccount: def, "acme": acme}
	})
	e.waitDrained(t, 20*time.Second)

	got, err := e.db.FindOrderByCode(ctx, "acme", theirs.OrderCode)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := other.Order(theirs.OrderCode)
	if diffs := ordersync.DiffOrders(&want, &got.Order); len(diffs) > 0 {
		t.Errorf("acme's order differs from acme's service: %v", diffs)
	}
	if _, err := e.db.FindOrderByCode(ctx, ordersync.DefaultAccount, theirs.OrderCode); err == nil {
		t.Error("acme's order was mirrored under the default account")
	}
	if _, err := e.db.FindOrderByCode(ctx, ordersync.DefaultAccount, mine.OrderCode); err != nil {
		t.Errorf("the default account's order: %v", err)
	}
	if n := other.Stats().GetsByOrder[theirs.OrderCode]; n != 1 {
		t.Errorf("acme's service was asked %d times for its order, want 1", n)
	}
	if n := e.sim.Stats().GetsByOrder[theirs.OrderCode]; n != 0 {
		t.Errorf("the default service was asked for acme's order")
	}
	dls := e.deadLetters(t, ordersync.ReasonRejected)
	if len(dls) != 1 || dls[0].Account != "ghost" {
		t.Fatalf("want one rejected dead letter for account ghost, got %+v", dls)
	}
}
