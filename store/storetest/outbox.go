package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testOutboxPaidExactlyOnce: each status change queues its message, the
// PAID trigger is queued once however often the order is seen paid, and a
// message marked sent is not pending again.
func testOutboxPaidExactlyOnce(t *testing.T, s Store) {
	ctx := context.Background()
	n := seqs(t, s, 5)
	steps := []struct {
		status ordersync.Status
		name   string
		paid   bool
	}{
		{ordersync.StatusPending, "a", false},
		{ordersync.StatusPaid, "a", true},
		{ordersync.StatusPaid, "b", false}, // a new document, still PAID
		{ordersync.StatusFinalized, "b", false},
		{ordersync.StatusFinalized, "b", false}, // unchanged
	}
	for i, st := range steps {
		if r := apply(t, s, params(order("Once01", 7, st.status, st.name), n[i]))[0]; r.Paid != st.paid {
			t.Errorf("step %d (%s): Paid %v, want %v", i, st.status, r.Paid, st.paid)
		}
	}
	msgs := pending(t, s)
	var got []string
	ids := map[string]bool{}
	for _, m := range msgs {
		got = append(got, m.Subject)
		if ids[m.MsgID] {
			t.Errorf("message id %s twice", m.MsgID)
		}
		ids[m.MsgID] = true
		// The payload is the order as mirrored (MirroredOrder's JSON).
		var payload struct {
			Account   string `json:"account"`
			OrderCode string `json:"orderCode"`
		}
		if err := json.Unmarshal(m.Payload, &payload); err != nil || payload.OrderCode != "Once01" || payload.Account != account {
			t.Errorf("payload of %s: %v, order %s/%s", m.MsgID, err, payload.Account, payload.OrderCode)
		}
	}
	want := []string{
		ordersync.SubjectStatusPrefix + "PENDING", ordersync.SubjectStatusPrefix + "PAID", ordersync.SubjectPaid,
		ordersync.SubjectStatusPrefix + "FINALIZED",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("outbox subjects %v, want %v (oldest first)", got, want)
	}
	if msgs[3].From != ordersync.StatusPaid || msgs[0].From != "" {
		t.Errorf("from statuses %q, %q; want \"\" and PAID", msgs[0].From, msgs[3].From)
	}
	if err := s.MarkOutboxSent(ctx, []int64{msgs[0].ID, msgs[1].ID}, time.Now()); err != nil {
		t.Fatalf("MarkOutboxSent: %v", err)
	}
	if err := s.MarkOutboxSent(ctx, []int64{msgs[0].ID, 1 << 40}, time.Now()); err != nil {
		t.Fatalf("MarkOutboxSent of sent and unknown ids: %v", err)
	}
	left := pending(t, s)
	if len(left) != 2 || left[0].ID != msgs[2].ID || left[1].ID != msgs[3].ID {
		t.Errorf("pending after marking two sent: %v, want the last two", left)
	}
}

// testOutboxFinalizedFiresPaid: an order first seen FINALIZED fires PAID.
func testOutboxFinalizedFiresPaid(t *testing.T, s Store) {
	n := seqs(t, s, 1)
	if r := apply(t, s, params(order("Fin01", 8, ordersync.StatusFinalized, "x"), n[0]))[0]; !r.Paid {
		t.Errorf("first seen FINALIZED: %+v, want Paid", r)
	}
	var subjects []string
	for _, m := range pending(t, s) {
		subjects = append(subjects, m.Subject)
	}
	if want := []string{ordersync.SubjectStatusPrefix + "FINALIZED", ordersync.SubjectPaid}; !slices.Equal(subjects, want) {
		t.Errorf("outbox %v, want %v", subjects, want)
	}
}
