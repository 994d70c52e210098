package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestPruneSentOutbox: only messages published before the cut-off go,
// oldest first and at most limit at a time; unpublished ones stay however
// old they are.
func TestPruneSentOutbox(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		for i := range 6 {
			apply(t, db, fetched(orderDoc(t, fmt.Sprintf("pr%d", i), i+1, ordersync.StatusPending), int64(i+1)))
		}
		msgs, err := db.PendingOutbox(ctx, 10)
		if err != nil || len(msgs) != 6 {
			t.Fatalf("PendingOutbox = %d messages, %v; want 6", len(msgs), err)
		}
		// Sent an hour apart, oldest first; the last one never sent.
		for i, m := range msgs[:5] {
			if err := db.MarkOutboxSent(ctx, []int64{m.ID}, testNow.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		cutoff := testNow.Add(3*time.Hour + time.Minute) // after the 4th
		if n, err := db.PruneSentOutbox(ctx, cutoff, 3); err != nil || n != 3 {
			t.Fatalf("PruneSentOutbox(limit 3) = %d, %v; want 3", n, err)
		}
		if n, err := db.PruneSentOutbox(ctx, cutoff, 3); err != nil || n != 1 {
			t.Fatalf("second PruneSentOutbox = %d, %v; want the 1 left before the cut-off", n, err)
		}
		if n, err := db.PruneSentOutbox(ctx, testNow.Add(1000*time.Hour), 100); err != nil || n != 1 {
			t.Fatalf("PruneSentOutbox of all sent = %d, %v; want 1", n, err)
		}
		pending, err := db.PendingOutbox(ctx, 10)
		if err != nil || len(pending) != 1 || pending[0].ID != msgs[5].ID {
			t.Errorf("the unsent message: %+v, %v; want %d kept", pending, err, msgs[5].ID)
		}
		if _, err := db.PruneSentOutbox(ctx, cutoff, 0); err == nil {
			t.Error("PruneSentOutbox with limit 0 succeeded")
		}
	})
}

// TestPruneEventLog: rows received before the cut-off go, in every
// account, oldest first and at most limit per call; later ones stay.
func TestPruneEventLog(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		var events []ordersync.EventRecord
		for _, account := range []string{"a", "b", "c"} {
			for h := range 4 {
				events = append(events, ordersync.EventRecord{MsgID: fmt.Sprintf("%s-%d", account, h), Account: account,
					ReceivedAt: testNow.Add(time.Duration(h) * time.Hour), Type: ordersync.EventCreated, Outcome: ordersync.OutcomeSynced})
			}
		}
		if err := db.RecordEvents(ctx, events); err != nil {
			t.Fatal(err)
		}
		cutoff := testNow.Add(90 * time.Minute) // hours 0 and 1 of each account: 6 rows
		total := 0
		for _, want := range []int{4, 2, 0} {
			n, err := db.PruneEventLog(ctx, cutoff, 4)
			if err != nil || n != want {
				t.Fatalf("PruneEventLog(limit 4) = %d, %v; want %d", n, err, want)
			}
			total += n
		}
		var left []string
		for _, account := range []string{"a", "b", "c"} {
			rows, err := db.ListEvents(ctx, ordersync.EventFilter{Account: account})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				left = append(left, r.MsgID)
			}
		}
		slices.Sort(left)
		if want := []string{"a-2", "a-3", "b-2", "b-3", "c-2", "c-3"}; !slices.Equal(left, want) {
			t.Errorf("after pruning %d: %q left, want %q", total, left, want)
		}
	})
}

// TestPruneDocumentChanges: document changes recorded before the cut-off
// go, oldest first and at most limit per call; later ones stay.
func TestPruneDocumentChanges(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		// The first fetch records no change; each of the next four does,
		// an hour apart.
		for i := range 5 {
			o, err := ordersync.DecodeOrder(fmt.Appendf(nil, `{"orderId":1,"orderCode":"dc1","orderStatus":"PENDING","name":"v%d"}`, i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: "default", Order: o, Seq: int64(i + 1),
				FetchedAt: testNow.Add(time.Duration(i) * time.Hour), Cause: ordersync.CauseReconcile}}); err != nil {
				t.Fatal(err)
			}
		}
		cutoff := testNow.Add(150 * time.Minute) // the changes of hours 1 and 2
		for _, want := range []int{1, 1, 0} {
			if n, err := db.PruneDocumentChanges(ctx, cutoff, 1); err != nil || n != want {
				t.Fatalf("PruneDocumentChanges(limit 1) = %d, %v; want %d", n, err, want)
			}
		}
		h, err := db.FindOrderHistory(ctx, "default", "dc1", 0)
		if err != nil {
			t.Fatal(err)
		}
		var left []time.Time
		for _, c := range h.DocumentChanges {
			left = append(left, c.At)
			if !slices.Equal(c.Fields, []string{"Name"}) {
				t.Errorf("fields %q, want [Name]", c.Fields)
			}
		}
		if want := []time.Time{testNow.Add(4 * time.Hour), testNow.Add(3 * time.Hour)}; !slices.EqualFunc(left, want, time.Time.Equal) {
			t.Errorf("left %v, want %v", left, want)
		}
	})
}
