package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// mirrorSnapshot is what a migration must keep of a mirror: every order as
// the readers rebuild it, its status history and its outbox messages.
type mirrorSnapshot struct {
	orders  map[string]*ordersync.MirroredOrder
	history map[string][]historyRow
	outbox  map[string][]ordersync.OutboxMessage
	pending []ordersync.OutboxMessage
}

func snapshot(t *testing.T, db *DB, codes ...string) mirrorSnapshot {
	t.Helper()
	ctx := context.Background()
	s := mirrorSnapshot{orders: map[string]*ordersync.MirroredOrder{}, history: map[string][]historyRow{}, outbox: map[string][]ordersync.OutboxMessage{}}
	for _, code := range codes {
		m, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, code)
		if err != nil {
			t.Fatalf("FindOrderByCode(%s): %v", code, err)
		}
		s.orders[code] = m
		s.history[code] = statusHistory(t, db, code)
		s.outbox[code] = outboxFor(t, db, code)
	}
	var err error
	if s.pending, err = db.PendingOutbox(ctx, 100); err != nil {
		t.Fatalf("PendingOutbox: %v", err)
	}
	return s
}

// TestMigrationOrderRows takes a mirror written by the current schema down
// to version 2 (children keyed by account and order code) and up again, and
// requires every order, line item, metadata entry, history row and outbox
// message to come back as it was, and the mirror to go on working.
func TestMigrationOrderRows(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		withMetadata := func(doc map[string]any) {
			doc["metadata"] = []any{map[string]any{"name": "numero_orden", "value": "A-1"}, map[string]any{"name": "canal", "value": "web"}}
		}
		apply(t, db,
			fetched(orderDoc(t, "o1", 101, ordersync.StatusPending, withMetadata), 1),
			fetched(orderDoc(t, "o2", 102, ordersync.StatusPending), 2),
		)
		apply(t, db, fetched(orderDoc(t, "o1", 101, ordersync.StatusPaid, withMetadata), 3))
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "o3", ID: "103"}); err != nil {
			t.Fatalf("RecordOrderRef: %v", err)
		}
		msgs, err := db.PendingOutbox(ctx, 100)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("PendingOutbox = %d messages, %v", len(msgs), err)
		}
		if err := db.MarkOutboxSent(ctx, []int64{msgs[0].ID}, time.Date(2026, 10, 10, 19, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, db, "o1", "o2")
		if len(before.orders["o1"].Order.LineItems) == 0 || len(before.orders["o1"].Order.Metadata) != 2 || len(before.history["o1"]) != 2 || len(before.outbox["o1"]) != 3 {
			t.Fatalf("test data too thin: %+v", before)
		}

		provider, unlock, err := db.migrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := provider.DownTo(ctx, 2); err != nil {
			unlock()
			t.Fatalf("migrate down to 2: %v", err)
		}
		unlock()
		// Version 2's shape: children keyed by account and order code.
		var items, history, outbox int
		for q, n := range map[string]*int{
			`SELECT COUNT(*) FROM order_line_items WHERE account = ? AND order_code = ?`: &items,
			`SELECT COUNT(*) FROM status_history WHERE account = ? AND order_code = ?`:   &history,
			`SELECT COUNT(*) FROM outbox WHERE account = ? AND order_code = ?`:           &outbox,
		} {
			if err := db.read.Get(n, db.rebind(q), ordersync.DefaultAccount, "o1"); err != nil {
				t.Fatalf("version 2 shape: %s: %v", q, err)
			}
		}
		if items != len(before.orders["o1"].Order.LineItems) || history != 2 || outbox != 3 {
			t.Errorf("at version 2, o1 has %d line items, %d history rows, %d outbox messages; want %d, 2, 3",
				items, history, outbox, len(before.orders["o1"].Order.LineItems))
		}

		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up again: %v", err)
		}
		after := snapshot(t, db, "o1", "o2")
		for code := range before.orders {
			if !reflect.DeepEqual(after.orders[code], before.orders[code]) {
				t.Errorf("order %s after the round trip:\n%+v\nwant\n%+v", code, after.orders[code], before.orders[code])
			}
			if !reflect.DeepEqual(after.history[code], before.history[code]) {
				t.Errorf("history of %s = %+v, want %+v", code, after.history[code], before.history[code])
			}
			if !reflect.DeepEqual(after.outbox[code], before.outbox[code]) {
				t.Errorf("outbox of %s = %+v, want %+v", code, after.outbox[code], before.outbox[code])
			}
		}
		// Going down through migration 6 drops the status a change left.
		for i := range before.pending {
			before.pending[i].From = ""
		}
		if !reflect.DeepEqual(after.pending, before.pending) {
			t.Errorf("pending outbox = %+v, want %+v", after.pending, before.pending)
		}
		if code, err := db.ResolveOrderCode(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, ID: "103"}); err != nil || code != "o3" {
			t.Errorf("placeholder o3 after the round trip: ResolveOrderCode = %q, %v", code, err)
		}

		// The outbox still refuses a second PAID message for o1.
		var row int64
		if err := db.read.Get(&row, db.rebind(`SELECT id FROM orders WHERE account = ? AND order_code = ?`), ordersync.DefaultAccount, "o1"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.write.Exec(db.rebind(`INSERT INTO outbox (order_row, account, order_code, subject, msg_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			row, ordersync.DefaultAccount, "o1", ordersync.SubjectPaid, "default:o1:paid", []byte("{}"), dbTime(time.Now())); err == nil {
			t.Errorf("a second default:o1:paid outbox message was accepted after the round trip")
		}

		// The migrated rows go on working: a changed document replaces o2's
		// line items, a new order and o3's first fetch get rows of their own.
		apply(t, db,
			fetched(orderDoc(t, "o2", 102, ordersync.StatusCancelled, func(doc map[string]any) {
				doc["lineItems"] = doc["lineItems"].([]any)[:1]
			}), 4),
			fetched(orderDoc(t, "o3", 103, ordersync.StatusPending), 5),
			fetched(orderDoc(t, "o4", 104, ordersync.StatusPending), 6),
		)
		final := snapshot(t, db, "o1", "o2", "o3", "o4")
		if n := len(final.orders["o2"].Order.LineItems); n != 1 {
			t.Errorf("o2 has %d line items after its change, want 1", n)
		}
		if got := final.history["o2"]; len(got) != 2 || got[1].To != "CANCELLED" {
			t.Errorf("o2 history = %+v, want PENDING then CANCELLED", got)
		}
		for _, code := range []string{"o3", "o4"} {
			if n, want := len(final.orders[code].Order.LineItems), len(before.orders["o1"].Order.LineItems); n != want {
				t.Errorf("%s has %d line items, want %d", code, n, want)
			}
		}
		if !reflect.DeepEqual(final.orders["o1"], before.orders["o1"]) {
			t.Errorf("o1 changed when other orders were applied")
		}
	})
}
