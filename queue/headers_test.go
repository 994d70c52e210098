package queue

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestOrderEventHeaders: an order event published with its facts (account,
// code, status reached, where the body's statusChange goes) reaches an
// endpoint's reader with them; one published without them (a message read
// back from the outbox, or queued by an earlier release) reaches it with
// none, for the dispatcher to read the payload.
func TestOrderEventHeaders(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	ctx := context.Background()
	payload := []byte(`{"account":"acme","orderCode":"A1","orderStatus":"PAID"}`)
	with := ordersync.OutboxMessage{Account: "acme", OrderCode: "A1", Subject: ordersync.SubjectStatusPrefix + "PAID", MsgID: "acme:A1:status:PAID:2",
		Payload: payload, From: ordersync.StatusPending, To: ordersync.StatusPaid, StatusChangeAt: len(payload) - 1}
	without := with
	without.MsgID, without.To, without.StatusChangeAt = "acme:A1:paid", "", 0
	src, err := q.EndpointEvents(ctx, "ep1", ordersync.HookEvents, time.Now().Add(-time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{with, without}); err != nil {
		t.Fatal(err)
	}
	var got []ordersync.OrderEvent
	for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		ds, err := src.Next(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			got = append(got, d.Event())
		}
	}
	if len(got) != 2 {
		t.Fatalf("got %d events, want 2", len(got))
	}
	if e := got[0]; e.Account != "acme" || e.OrderCode != "A1" || e.To != ordersync.StatusPaid || e.StatusChangeAt != len(payload)-1 || e.From != ordersync.StatusPending {
		t.Errorf("event with headers read as %+v", e)
	}
	if e := got[1]; e.Account != "" || e.OrderCode != "" || e.To != "" || e.StatusChangeAt != 0 || e.From != ordersync.StatusPending {
		t.Errorf("event without headers read as %+v", e)
	}
}
