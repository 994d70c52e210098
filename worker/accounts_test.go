package worker_test

import (
	"context"
	"errors"
	"strings"
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
	t.Parallel()
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
	// One writer for the process, as serve has: it labels each order with
	// its own account.
	writer, err := worker.NewMirrorWriter(worker.MirrorWriterConfig{Mirror: e.db, Registerer: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	acme := e.newSyncer(t, newClient(t, otherURL, "sk_acme"), func(c *worker.SyncerConfig) {
		c.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"account": "acme"}, e.reg)
		c.Writer = writer
	})
	// Every account's collectors carry its name, the default's too: one
	// metric family has one set of label names.
	def := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"account": ordersync.DefaultAccount}, e.reg)
		c.Writer = writer
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
	// A payment webhook for acme's unpaid order: drift, counted under acme.
	evTheirsPaid := e.webhook(theirs.OrderID, ordersync.EventSuccessPayment)
	evTheirsPaid.Account = "acme"
	evGhost := e.event([]byte(`{"orderCode":"GHOST01","orderType":"FASTLINK_CHARGE","type":"Created"}`))
	evGhost.Account = "ghost"
	e.publish(t, evMine, evTheirs, evTheirsPaid, evGhost)
	e.startPool(t, def, func(c *worker.PoolConfig) {
		c.Accounts = worker.Accounts{ordersync.DefaultAccount: def, "acme": acme}
		c.Writer = writer
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
	for account, want := range map[string]float64{"acme": 1, ordersync.DefaultAccount: 0} {
		labels := map[string]string{"account": account, "kind": "status_mismatch"}
		if got := counterValue(t, e.reg, "ordersync_drift_total", labels); got != want {
			t.Errorf("drift %v = %v, want %v", labels, got, want)
		}
	}
	// The commit stage writes every account's orders, each counted under
	// its own account.
	for account, want := range map[string]float64{"acme": 1, ordersync.DefaultAccount: 1} {
		for name, labels := range map[string]map[string]string{
			"ordersync_mirror_upserts_total":        {"account": account, "result": "created"},
			"ordersync_mirror_status_changes_total": {"account": account, "status": "PENDING"},
		} {
			if got := counterValue(t, e.reg, name, labels); got != want {
				t.Errorf("%s%v = %v, want %v", name, labels, got, want)
			}
		}
	}
}

// TestUnknownAccountEveryPath: the follower, the replayer and the pool
// route through the one Accounts, so an account the deployment does not
// serve fails the same way on each: the router's error, naming the
// account, and nothing sent upstream.
func TestUnknownAccountEveryPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	ctx := context.Background()
	s := e.newSyncer(t, nil, nil)
	accounts := worker.Accounts{ordersync.DefaultAccount: s}
	_, want := accounts.For("ghost")
	if !errors.Is(want, worker.ErrUnknownAccount) {
		t.Fatalf("Accounts.For: %v, want ErrUnknownAccount", want)
	}
	follower, err := worker.NewFollower(worker.FollowerConfig{Accounts: accounts, Mirror: e.db, Reader: e.db})
	if err != nil {
		t.Fatal(err)
	}
	replayer, err := worker.NewReplayer(worker.ReplayerConfig{DeadLetters: e.db, Publisher: e.q, Accounts: accounts})
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.db.AddDeadLetter(ctx, ordersync.DeadLetter{
		MsgID: "m-ghost", Account: "ghost", Reason: ordersync.ReasonRejected, Attempts: 1, LastError: "x",
		Body: []byte(`{"orderCode":"GHOST01","type":"Created"}`), CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	amount := ordersync.MustAmount("5.00")
	paths := map[string]func() error{
		"create a link": func() error {
			_, err := follower.CreatePaymentLink(ctx, "ghost", ordersync.PaymentLinkParams{Amount: &amount})
			return err
		},
		"track an order":  func() error { _, err := follower.TrackOrder(ctx, "ghost", "GHOST01"); return err },
		"replay a letter": func() error { return replayer.ReplayDeadLetter(ctx, id) },
		"replay an account's letters": func() error {
			_, err := replayer.ReplayDeadLetters(ctx, ordersync.DeadLetterFilter{Account: "ghost"})
			return err
		},
	}
	for name, path := range paths {
		if err := path(); !errors.Is(err, worker.ErrUnknownAccount) || !strings.HasSuffix(err.Error(), ": "+want.Error()) {
			t.Errorf("%s: %v, want an error ending in %q", name, err, want)
		}
	}
	// A replay of every account's letters leaves the unknown one's alone:
	// queued again, it would only be dead-lettered anew.
	if n, err := replayer.ReplayDeadLetters(ctx, ordersync.DeadLetterFilter{}); err != nil || n != 0 {
		t.Errorf("replay all = %d, %v; want 0, nil", n, err)
	}
	if dl, err := e.db.FindDeadLetter(ctx, id); err != nil || dl.ReplayedAt != nil {
		t.Errorf("the unknown account's letter: %+v, %v; want it unreplayed", dl, err)
	}
	// The pool, for an event of that account: a rejected dead letter
	// whose error is the router's.
	ev := e.event([]byte(`{"orderCode":"GHOST02","orderType":"FASTLINK_CHARGE","type":"Created"}`))
	ev.Account = "ghost"
	e.publish(t, ev)
	e.startPool(t, s, func(c *worker.PoolConfig) { c.Accounts = accounts })
	e.waitDrained(t, 20*time.Second)
	var pooled *ordersync.DeadLetter
	for _, dl := range e.deadLetters(t, ordersync.ReasonRejected) {
		if dl.ID != id {
			pooled = dl
		}
	}
	if pooled == nil || pooled.Account != "ghost" || !strings.Contains(pooled.LastError, want.Error()) {
		t.Errorf("the pool's dead letter: %+v, want one naming %q", pooled, want)
	}
	if st := e.sim.Stats(); st.Checkouts != 0 || st.Gets != 0 {
		t.Errorf("requests sent upstream for an unknown account: %d checkouts, %d gets", st.Checkouts, st.Gets)
	}
}
