package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testDeliveryLog: a webhook-id is one row, the last end of it.
func testDeliveryLog(t *testing.T, s Store) {
	ctx := context.Background()
	at := time.Now()
	rec := ordersync.DeliveryRecord{WebhookID: "wh-1", EndpointID: "ep_1", Event: ordersync.HookEvent("order.paid"), Account: account,
		OrderCode: "Del01", OrderStatus: ordersync.StatusPaid, Outcome: ordersync.DeliveryDeadLettered, Attempts: 3, Status: 500, At: at}
	other := rec
	other.WebhookID, other.At = "wh-2", at.Add(time.Second)
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec, other}); err != nil {
		t.Fatalf("RecordDeliveries: %v", err)
	}
	rec.Outcome, rec.Status, rec.At = ordersync.DeliveryDelivered, 200, at.Add(2*time.Second)
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec}); err != nil {
		t.Fatalf("RecordDeliveries again: %v", err)
	}
	got, err := s.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: account, OrderCode: "Del01"})
	if err != nil || len(got) != 2 || got[0].WebhookID != "wh-1" || got[0].Outcome != ordersync.DeliveryDelivered || got[0].Status != 200 {
		t.Errorf("ListDeliveries = %+v, %v; want wh-1 delivered first, then wh-2", got, err)
	}
	// Health: wh-1 delivered, wh-2 dead-lettered, on ep_1; one before the
	// period on ep_2 counts not.
	old := ordersync.DeliveryRecord{WebhookID: "wh-old", EndpointID: "ep_2", Event: rec.Event, Account: account, OrderCode: "Del02",
		Outcome: ordersync.DeliveryGone, Status: 410, At: at.Add(-time.Hour)}
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{old}); err != nil {
		t.Fatal(err)
	}
	health, err := s.DeliveryHealth(ctx, at.Add(-time.Minute))
	h := health["ep_1"]
	if err != nil || len(health) != 1 || h.Delivered != 1 || h.Failed != 1 || h.LastFailure == nil || h.LastFailure.WebhookID != "wh-2" || h.LastFailure.Status != 500 {
		t.Errorf("DeliveryHealth = %+v, %v; want ep_1 alone: 1 delivered, 1 failed, wh-2 last", health, err)
	}
	if rate, ok := h.SuccessRate(); !ok || rate != 0.5 {
		t.Errorf("success rate %v %v, want 0.5", rate, ok)
	}
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{{WebhookID: "wh-3"}}); err == nil {
		t.Error("RecordDeliveries without an endpoint succeeded")
	}
}
