package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testDeliveryDeadLetters: a letter is kept as given (its answer clipped to
// a KiB), a second letter of the same delivery not yet replayed updates the
// first, a replayed one leaves the pending counts and the default listing,
// and the same delivery failing again after its replay is a new letter.
func testDeliveryDeadLetters(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.AddDeliveryDeadLetter(ctx, ordersync.DeliveryDeadLetter{EndpointID: "crm", Event: ordersync.HookEvent("order.paid")}); err == nil {
		t.Error("a letter without a webhook-id was kept")
	}
	created := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	dl := ordersync.DeliveryDeadLetter{
		EndpointID: "crm", Event: ordersync.HookEvent("order.paid"), WebhookID: "msg_1", Account: account, OrderCode: "Dl01",
		Attempts: 3, LastStatus: 500, LastBody: strings.Repeat("x", 3000), Body: []byte(`{"type":"order.paid"}`), CreatedAt: created,
	}
	id, err := s.AddDeliveryDeadLetter(ctx, dl)
	if err != nil {
		t.Fatalf("AddDeliveryDeadLetter: %v", err)
	}
	got, err := s.FindDeliveryDeadLetter(ctx, id)
	if err != nil {
		t.Fatalf("FindDeliveryDeadLetter(%d): %v", id, err)
	}
	if got.ID != id || got.EndpointID != "crm" || got.Event != dl.Event || got.WebhookID != "msg_1" || got.Account != account ||
		got.OrderCode != "Dl01" || got.Attempts != 3 || got.LastStatus != 500 || len(got.LastBody) != 1024 ||
		string(got.Body) != string(dl.Body) || !got.CreatedAt.Equal(created) || got.ReplayedAt != nil || got.ReplayCount != 0 {
		t.Errorf("the letter read back as %+v (answer of %d bytes)", got, len(got.LastBody))
	}

	again := dl
	again.Attempts, again.LastStatus, again.LastBody, again.LastError = 5, 0, "", "connection refused"
	if id2, err := s.AddDeliveryDeadLetter(ctx, again); err != nil || id2 != id {
		t.Fatalf("the same delivery again: id %d, %v; want the first letter's %d", id2, err, id)
	}
	if got, err := s.FindDeliveryDeadLetter(ctx, id); err != nil || got.Attempts != 5 || got.LastStatus != 0 || got.LastError != "connection refused" {
		t.Errorf("the updated letter: %+v, %v; want 5 attempts, no status, the error", got, err)
	}
	other := dl
	other.EndpointID, other.WebhookID = "erp", "msg_2"
	otherID, err := s.AddDeliveryDeadLetter(ctx, other)
	if err != nil {
		t.Fatalf("AddDeliveryDeadLetter(erp): %v", err)
	}
	if n, err := s.PendingDeliveryDeadLetters(ctx); err != nil || len(n) != 2 || n["crm"] != 1 || n["erp"] != 1 {
		t.Errorf("PendingDeliveryDeadLetters = %v, %v; want crm 1, erp 1", n, err)
	}
	list, err := s.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{})
	if err != nil || len(list) != 2 || list[0].ID != otherID || list[1].ID != id {
		t.Errorf("ListDeliveryDeadLetters = %v, %v; want erp's then crm's, newest first", list, err)
	}

	replayed := created.Add(time.Hour)
	if err := s.MarkDeliveryDeadLetterReplayed(ctx, id, replayed); err != nil {
		t.Fatalf("MarkDeliveryDeadLetterReplayed: %v", err)
	}
	if got, err := s.FindDeliveryDeadLetter(ctx, id); err != nil || got.ReplayedAt == nil || !got.ReplayedAt.Equal(replayed) || got.ReplayCount != 1 {
		t.Errorf("the replayed letter: %+v, %v; want replayed at %v, once", got, err, replayed)
	}
	if n, err := s.PendingDeliveryDeadLetters(ctx); err != nil || len(n) != 1 || n["erp"] != 1 {
		t.Errorf("PendingDeliveryDeadLetters after a replay = %v, %v; want erp 1", n, err)
	}
	if list, err := s.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{EndpointID: "crm"}); err != nil || len(list) != 0 {
		t.Errorf("crm's letters not replayed: %v, %v; want none", list, err)
	}
	if list, err := s.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{EndpointID: "crm", IncludeReplayed: true}); err != nil || len(list) != 1 || list[0].ID != id {
		t.Errorf("crm's letters, replayed too: %v, %v; want the one", list, err)
	}
	if id3, err := s.AddDeliveryDeadLetter(ctx, dl); err != nil || id3 == id || id3 == otherID {
		t.Errorf("the delivery failing after its replay: id %d, %v; want a new letter", id3, err)
	}

	if _, err := s.FindDeliveryDeadLetter(ctx, 9999); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindDeliveryDeadLetter of an unknown id: %v, want ErrNotFound", err)
	}
	if err := s.MarkDeliveryDeadLetterReplayed(ctx, 9999, replayed); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("MarkDeliveryDeadLetterReplayed of an unknown id: %v, want ErrNotFound", err)
	}
}
