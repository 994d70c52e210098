package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestEventLogOrderRow checks migration 20 on a mirror whose events the
// previous schema wrote: the apply logs a fetched order's events under its
// row id, events logged alone keep none, and an order's events (ListEvents
// by code, the payment announcements) are found either way.
func TestEventLogOrderRow(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDBAt(t, url, 19)
		at := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
		if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO event_log (msg_id, account, received_at, type, order_code, outcome)
VALUES (?, ?, ?, ?, ?, ?)`), "old-1", ordersync.DefaultAccount, at, string(ordersync.EventCreated), "ev1", string(ordersync.OutcomeSynced)); err != nil {
			t.Fatalf("an event as version 19 logged it: %v", err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up to 20: %v", err)
		}

		if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "alone-1", Account: ordersync.DefaultAccount, ReceivedAt: at.Add(time.Minute),
			Type: ordersync.EventUpdated, OrderCode: "ev1", Outcome: ordersync.OutcomeIgnored}}); err != nil {
			t.Fatalf("RecordEvents: %v", err)
		}
		paidHook := at.Add(3 * time.Minute)
		apply(t, db,
			fetched(orderDoc(t, "ev1", 201, ordersync.StatusPending), 1,
				ordersync.EventRecord{MsgID: "with-1", ReceivedAt: at.Add(2 * time.Minute), Type: ordersync.EventCreated}),
			// A payment announced with a fetch that still saw the order pending.
			fetched(orderDoc(t, "ev2", 202, ordersync.StatusPending), 2,
				ordersync.EventRecord{MsgID: "with-2", ReceivedAt: paidHook, Type: ordersync.EventSuccessPayment}))

		rows := map[string]*int64{}
		var ids []struct {
			MsgID    string `db:"msg_id"`
			OrderRow *int64 `db:"order_row"`
		}
		if err := db.read.SelectContext(ctx, &ids, `SELECT msg_id, order_row FROM event_log`); err != nil {
			t.Fatal(err)
		}
		for _, r := range ids {
			rows[r.MsgID] = r.OrderRow
		}
		var ev1, ev2 int64
		for code, id := range map[string]*int64{"ev1": &ev1, "ev2": &ev2} {
			if err := db.read.GetContext(ctx, id, db.rebind(`SELECT id FROM orders WHERE account = ? AND order_code = ?`), ordersync.DefaultAccount, code); err != nil {
				t.Fatal(err)
			}
		}
		for msg, want := range map[string]int64{"old-1": 0, "alone-1": 0, "with-1": ev1, "with-2": ev2} {
			got := int64(0)
			if rows[msg] != nil {
				got = *rows[msg]
			}
			if got != want {
				t.Errorf("event %s has order_row %d, want %d (0: none)", msg, got, want)
			}
		}

		for _, account := range []string{ordersync.DefaultAccount, ""} {
			events, err := db.ListEvents(ctx, ordersync.EventFilter{Account: account, OrderCode: "ev1"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range events {
				got = append(got, e.MsgID)
			}
			if want := []string{"with-1", "alone-1", "old-1"}; !slices.Equal(got, want) {
				t.Errorf("ListEvents(account %q, code ev1) = %v, want %v", account, got, want)
			}
		}

		apply(t, db, fetched(orderDoc(t, "ev2", 202, ordersync.StatusPaid), 3))
		o, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, "ev2")
		if err != nil {
			t.Fatal(err)
		}
		if o.Sync.PaidAt == nil || !o.Sync.PaidAt.Equal(paidHook) {
			t.Errorf("ev2 paidAt = %v, want the announcing webhook's %v", o.Sync.PaidAt, paidHook)
		}
	})
}
