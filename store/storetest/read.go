package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testReaders: the back office's reads of what was applied.
func testReaders(t *testing.T, s Store) {
	ctx := context.Background()
	if cur, err := s.StoreCurrency(ctx, account); err != nil || cur != "" {
		t.Errorf("StoreCurrency of an empty mirror = %q, %v", cur, err)
	}
	n := seqs(t, s, 3)
	apply(t, s,
		params(order("Read01", 1, ordersync.StatusPending, "x"), n[0]),
		params(order("Read02", 2, ordersync.StatusPaid, "x"), n[1]),
		params(order("Read03", 3, ordersync.StatusPaid, "x"), n[2]))
	if cur, err := s.StoreCurrency(ctx, account); err != nil || cur != "USD" {
		t.Errorf("StoreCurrency = %q, %v; want USD", cur, err)
	}
	counts, err := s.CountOrdersByStatus(ctx)
	if err != nil || counts[ordersync.StatusPaid] != 2 || counts[ordersync.StatusPending] != 1 || counts[ordersync.StatusCancelled] != 0 {
		t.Errorf("CountOrdersByStatus = %v, %v", counts, err)
	}
	if _, ok := counts[ordersync.StatusCancelled]; !ok {
		t.Error("CountOrdersByStatus leaves out a status no order has")
	}
	page, err := s.ListOrders(ctx, ordersync.OrderFilter{Account: account, Statuses: []ordersync.Status{ordersync.StatusPaid}, Limit: 1, Count: true})
	if err != nil || page.Total == nil || *page.Total != 2 || len(page.Orders) != 1 || page.Orders[0].Order.OrderCode != "Read03" {
		t.Errorf("ListOrders = %+v, %v; want 2 in all, Read03 (the newest) on a page of 1", page, err)
	}
	// The Orders page's counts: exact up to a bound, then one past it (read
	// "more than"), with or without a filter, and an order recorded but not
	// fetched yet counted by none.
	if err := s.RecordOrderRef(ctx, ordersync.OrderRef{Account: account, Code: "Read09", ID: "99", Reference: "r-99"}); err != nil {
		t.Fatalf("RecordOrderRef: %v", err)
	}
	paid, created := []ordersync.Status{ordersync.StatusPaid}, time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		f    ordersync.OrderFilter
		want int
	}{
		{"every order", ordersync.OrderFilter{}, 3},
		{"every order, up to 2", ordersync.OrderFilter{CountUpTo: 2}, 3},
		{"every order, up to 3", ordersync.OrderFilter{CountUpTo: 3}, 3},
		{"paid", ordersync.OrderFilter{Statuses: paid}, 2},
		{"paid, up to 1", ordersync.OrderFilter{Statuses: paid, CountUpTo: 1}, 2},
		{"paid, up to 2", ordersync.OrderFilter{Statuses: paid, CountUpTo: 2}, 2},
		{"created since, up to 10", ordersync.OrderFilter{Since: created, CountUpTo: 10}, 3},
		{"paid, created since, up to 1", ordersync.OrderFilter{Statuses: paid, Since: created, CountUpTo: 1}, 2},
	} {
		c.f.Account, c.f.Count, c.f.Limit = account, true, 1
		page, err := s.ListOrders(ctx, c.f)
		if err != nil || page.Total == nil || *page.Total != c.want {
			t.Errorf("ListOrders, %s: total %v, %v; want %d", c.name, page.Total, err, c.want)
		}
	}
	m := find(t, s, "Read02")
	if m.Account != account || m.Order.OrderStatus != ordersync.StatusPaid || m.Order.Total.String() != "10.50" || len(m.Order.Raw) == 0 {
		t.Errorf("FindOrderByCode = %+v", m)
	}
}

// testOrderHistory: a fetch that changes a fetched document records when,
// why and which fields changed (names, not values); the first fetch and a
// fetch that changes nothing record none. The history also holds the
// status changes and the outbox messages, the PAID trigger with the time
// it was published, newest first, at most limit of each.
func testOrderHistory(t *testing.T, s Store) {
	ctx := context.Background()
	paid := func(email string) *ordersync.Order {
		o := order("Hist01", 9, ordersync.StatusPaid, "x")
		o.Payment.Buyer.Email = email
		return o
	}
	n := seqs(t, s, 5)
	steps := []ordersync.ApplyParams{
		params(order("Hist01", 9, ordersync.StatusPending, "x"), n[0]),
		params(order("Hist01", 9, ordersync.StatusPending, "x"), n[1]), // unchanged
		params(paid("ana@example.com"), n[2]),
		params(paid("ana@example.org"), n[3]),
		params(paid("ana@example.org"), n[4]), // unchanged
	}
	steps[2].Cause = ordersync.CauseReconcile
	for i := range steps {
		steps[i].FetchedAt = time.Date(2026, 11, 20, 10, i, 0, 0, time.UTC)
		apply(t, s, steps[i])
	}
	h, err := s.FindOrderHistory(ctx, account, "Hist01", 0)
	if err != nil {
		t.Fatalf("FindOrderHistory: %v", err)
	}
	want := []ordersync.DocumentChange{
		{Account: account, OrderCode: "Hist01", At: steps[3].FetchedAt, Cause: ordersync.CauseWebhook, Fields: []string{"Payment.Buyer.Email"}},
		{Account: account, OrderCode: "Hist01", At: steps[2].FetchedAt, Cause: ordersync.CauseReconcile, Fields: []string{"OrderStatus", "Payment"}},
	}
	if len(h.DocumentChanges) != len(want) {
		t.Fatalf("document changes %+v, want %+v", h.DocumentChanges, want)
	}
	for i, c := range h.DocumentChanges {
		w := want[i]
		if c.Account != w.Account || c.OrderCode != w.OrderCode || !c.At.Equal(w.At) || c.Cause != w.Cause || !slices.Equal(c.Fields, w.Fields) {
			t.Errorf("document change %d: %+v, want %+v", i, c, w)
		}
	}
	if len(h.StatusChanges) != 2 || h.StatusChanges[0].From != ordersync.StatusPending || h.StatusChanges[0].To != ordersync.StatusPaid ||
		!h.StatusChanges[0].At.Equal(steps[2].FetchedAt) || h.StatusChanges[1].To != ordersync.StatusPending {
		t.Errorf("status changes %+v, want PENDING → PAID, then the first PENDING", h.StatusChanges)
	}
	var subjects []string
	var trigger ordersync.OutboxMessage
	for _, m := range h.Messages {
		subjects = append(subjects, m.Subject)
		if m.Subject == ordersync.SubjectPaid {
			trigger = m
		}
		if m.Payload != nil || m.SentAt != nil || m.CreatedAt.IsZero() || m.OrderCode != "Hist01" {
			t.Errorf("message %+v: want no payload, not sent, a creation time", m)
		}
	}
	if want := []string{ordersync.SubjectPaid, ordersync.SubjectStatusPrefix + "PAID", ordersync.SubjectStatusPrefix + "PENDING"}; !slices.Equal(subjects, want) {
		t.Fatalf("messages %v, want %v (newest first)", subjects, want)
	}
	sent := time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC)
	if err := s.MarkOutboxSent(ctx, []int64{trigger.ID}, sent); err != nil {
		t.Fatal(err)
	}
	h, err = s.FindOrderHistory(ctx, account, "Hist01", 1)
	if err != nil || len(h.DocumentChanges) != 1 || len(h.StatusChanges) != 1 || len(h.Messages) != 1 {
		t.Fatalf("FindOrderHistory(limit 1) = %+v, %v; want one of each", h, err)
	}
	if m := h.Messages[0]; m.Subject != ordersync.SubjectPaid || m.SentAt == nil || !m.SentAt.Equal(sent) {
		t.Errorf("the PAID trigger after publishing: %+v, want sent at %v", m, sent)
	}
	if _, err := s.FindOrderHistory(ctx, account, "Nope01", 0); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindOrderHistory of an unknown order: %v, want ErrNotFound", err)
	}
}

// testListSummary: a listing carries each order's line items and
// metadata, and a summary listing (the console's list, which shows
// neither) leaves both out and nothing else.
func testListSummary(t *testing.T, s Store) {
	ctx := context.Background()
	o := order("Sum01", 1, ordersync.StatusPaid, "x")
	o.LineItems = []ordersync.LineItem{{ProductID: "p1", SKU: "SKU-1", Name: "Café", Price: ordersync.MustAmount("10.50"), Quantity: 1,
		SubTotal: ordersync.MustAmount("10.50")}}
	o.Metadata = []ordersync.MetadataEntry{{Name: "table", Value: "7"}}
	apply(t, s, params(o, seqs(t, s, 1)[0]))
	full, err := s.ListOrders(ctx, ordersync.OrderFilter{Account: account})
	if err != nil || len(full.Orders) != 1 || len(full.Orders[0].Order.LineItems) != 1 || len(full.Orders[0].Order.Metadata) != 1 {
		t.Fatalf("ListOrders = %+v, %v; want Sum01 with its line and its metadata", full, err)
	}
	sum, err := s.ListOrders(ctx, ordersync.OrderFilter{Account: account, Summary: true})
	if err != nil || len(sum.Orders) != 1 {
		t.Fatalf("ListOrders, a summary = %+v, %v; want Sum01", sum, err)
	}
	got, want := sum.Orders[0], full.Orders[0]
	if len(got.Order.LineItems) != 0 || len(got.Order.Metadata) != 0 {
		t.Errorf("a summary's order has lines %v, metadata %v; want none", got.Order.LineItems, got.Order.Metadata)
	}
	want.Order.LineItems, want.Order.Metadata = got.Order.LineItems, got.Order.Metadata
	if !reflect.DeepEqual(got, want) {
		t.Errorf("a summary's order differs beyond its lines and metadata:\n%+v\nwant\n%+v", got, want)
	}
}
