package worker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// countingDeadLetters counts the list queries made of the mirror's dead
// letters.
type countingDeadLetters struct {
	ordersync.DeadLetters
	lists atomic.Int64
}

func (c *countingDeadLetters) ListDeadLetters(ctx context.Context, f ordersync.DeadLetterFilter) ([]*ordersync.DeadLetter, error) {
	c.lists.Add(1)
	return c.DeadLetters.ListDeadLetters(ctx, f)
}

// TestReplayUnresolved: the orders that became known replay exactly the
// unresolved letters that name them, by id or by reference; and when no
// unresolved letter is pending, a call for many orders costs one query, as
// the pool makes one call for every batch of newly mirrored orders.
func TestReplayUnresolved(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	ctx := context.Background()
	dls := &countingDeadLetters{DeadLetters: e.db}
	r, err := worker.NewReplayer(worker.ReplayerConfig{DeadLetters: dls, Publisher: e.q})
	if err != nil {
		t.Fatal(err)
	}
	account := ordersync.DefaultAccount

	var refs []ordersync.OrderRef
	for i := range 200 {
		refs = append(refs, ordersync.OrderRef{Account: account, Code: fmt.Sprintf("C%04d", i), ID: ordersync.ID(fmt.Sprint(7100 + i))})
	}
	if n, err := r.ReplayUnresolved(ctx, refs...); err != nil || n != 0 {
		t.Fatalf("ReplayUnresolved with no letters = %d, %v; want 0, nil", n, err)
	}
	if got := dls.lists.Load(); got != 1 {
		t.Errorf("%d dead-letter queries for 200 known orders and no unresolved letter, want 1", got)
	}

	add := func(reason ordersync.DeadLetterReason, id ordersync.ID, reference string) int64 {
		t.Helper()
		n, err := e.db.AddDeadLetter(ctx, ordersync.DeadLetter{
			MsgID: fmt.Sprintf("m-%s-%s-%s", reason, id, reference), Account: account, Reason: reason,
			Attempts: 1, LastError: "x", OrderID: id, OrderReference: reference,
			Body: fmt.Appendf(nil, `{"orderId":"%s","orderReference":"%s","type":"Created"}`, id, reference), CreatedAt: time.Now(),
		})
		if err != nil {
			t.Fatalf("AddDeadLetter: %v", err)
		}
		return n
	}
	byID := add(ordersync.ReasonUnresolved, "7001", "")
	byRef := add(ordersync.ReasonUnresolved, "", "ref-7002")
	otherReason := add(ordersync.ReasonUnknownOrder, "7001", "")
	otherOrder := add(ordersync.ReasonUnresolved, "7999", "")

	n, err := r.ReplayUnresolved(ctx,
		ordersync.OrderRef{Account: account, Code: "A", ID: "7001"},
		ordersync.OrderRef{Account: account, Code: "B", ID: "7002", Reference: "ref-7002"},
		ordersync.OrderRef{Account: account, Code: "C", ID: "7003"},
	)
	if err != nil || n != 2 {
		t.Fatalf("ReplayUnresolved = %d, %v; want 2, nil", n, err)
	}
	for id, want := range map[int64]bool{byID: true, byRef: true, otherReason: false, otherOrder: false} {
		dl, err := e.db.FindDeadLetter(ctx, id)
		if err != nil {
			t.Fatalf("FindDeadLetter(%d): %v", id, err)
		}
		if replayed := dl.ReplayedAt != nil; replayed != want {
			t.Errorf("dead letter %d (%s, id %q, reference %q) replayed = %v, want %v", id, dl.Reason, dl.OrderID, dl.OrderReference, replayed, want)
		}
	}
	if pending, _, _ := e.consumerState(t); pending != 2 {
		t.Errorf("%d events queued by the replay, want 2", pending)
	}
}

// TestPoolReplaysUnresolvedOnceKnown: an event dead-lettered as unresolved
// is replayed and mirrored once a later event makes the pool mirror its
// order for the first time.
func TestPoolReplaysUnresolvedOnceKnown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	amount := ordersync.MustAmount("9.50")
	o, err := e.sim.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount})
	if err != nil {
		t.Fatalf("CreatePaymentLink: %v", err)
	}
	r, err := worker.NewReplayer(worker.ReplayerConfig{DeadLetters: e.db, Publisher: e.q})
	if err != nil {
		t.Fatal(err)
	}
	var known atomic.Int64
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.OnOrdersKnown = func(ctx context.Context, refs []ordersync.OrderRef) {
			known.Add(int64(len(refs)))
			if _, err := r.ReplayUnresolved(ctx, refs...); err != nil {
				t.Errorf("ReplayUnresolved: %v", err)
			}
		}
	})

	// Only the order's id: nobody recorded it, so it cannot resolve.
	paid := e.webhook(o.OrderID, ordersync.EventSuccessPayment)
	e.publish(t, paid)
	waitFor(t, 10*time.Second, "the event dead-lettered as unresolved", func() bool {
		return len(e.deadLetters(t, ordersync.ReasonUnresolved)) == 1
	})
	if _, err := e.sim.Pay(o.OrderCode, ordersync.Buyer{Name: "Ana", Email: "ana@example.com"}); err != nil {
		t.Fatalf("Pay: %v", err)
	}
	// An event that names the order's code makes the order known.
	e.publish(t, e.event(fmt.Appendf(nil, `{"orderCode":%q,"orderId":"%s","type":"Created","orderType":"FASTLINK_CHARGE"}`, o.OrderCode, o.OrderID)))
	waitFor(t, 10*time.Second, "the unresolved event replayed", func() bool {
		pending, err := e.db.ListDeadLetters(context.Background(), ordersync.DeadLetterFilter{Reason: ordersync.ReasonUnresolved})
		return err == nil && len(pending) == 0
	})
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, []string{o.OrderCode})
	if got := known.Load(); got != 1 {
		t.Errorf("%d orders reported known, want 1", got)
	}
	events, err := e.db.ListEvents(context.Background(), ordersync.EventFilter{OrderID: o.OrderID})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	replayed := false
	for _, ev := range events {
		replayed = replayed || (ev.Type == ordersync.EventSuccessPayment && ev.Outcome == ordersync.OutcomeSynced)
	}
	if !replayed {
		t.Errorf("the order's event log %+v lacks the replayed SuccessPayment event, synced", events)
	}
}
