package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testEventLogUpserts: a receipt (account, receipt time, MsgID) is one
// row, taking the latest outcome; the same MsgID received again at
// another time (a body re-sent past the queue's duplicate window) is a
// row of its own.
func testEventLogUpserts(t *testing.T, s Store) {
	ctx := context.Background()
	ev := ordersync.EventRecord{MsgID: "ev-1", Account: account, ReceivedAt: time.Now(), Type: "Created", OrderID: "5", Outcome: ordersync.OutcomeIgnored}
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{ev}); err != nil {
		t.Fatalf("RecordEvents: %v", err)
	}
	ev.Outcome, ev.Detail, ev.Type = ordersync.OutcomeRejected, "why", ""
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{ev}); err != nil {
		t.Fatalf("RecordEvents again: %v", err)
	}
	evs, err := s.ListEvents(ctx, ordersync.EventFilter{Account: account, OrderID: "5"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ListEvents = %v, %v; want one row", evs, err)
	}
	if evs[0].Outcome != ordersync.OutcomeRejected || evs[0].Detail != "why" || evs[0].Type != "Created" {
		t.Errorf("upserted row %+v, want rejected, its detail, the type kept", evs[0])
	}
	again := ev
	again.ReceivedAt, again.Outcome, again.Detail = ev.ReceivedAt.Add(time.Hour), ordersync.OutcomeIgnored, ""
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{again}); err != nil {
		t.Fatalf("RecordEvents at another receipt: %v", err)
	}
	if evs, err := s.ListEvents(ctx, ordersync.EventFilter{Account: account, OrderID: "5"}); err != nil || len(evs) != 2 {
		t.Fatalf("ListEvents after a second receipt = %v, %v; want two rows", evs, err)
	}
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "ev-2"}}); err == nil {
		t.Error("RecordEvents without an account succeeded")
	}
}
