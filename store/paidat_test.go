package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// webhook is a logged webhook of type typ received at.
func webhook(code string, typ ordersync.EventType, at time.Time) ordersync.EventRecord {
	return ordersync.EventRecord{MsgID: fmt.Sprintf("%s-%s-%d", code, typ, at.UnixNano()), ReceivedAt: at, Type: typ, OrderType: ordersync.OrderTypePaymentLink}
}

// syncOf reads an order's sync information, failing the test when it is
// not mirrored.
func syncOf(t *testing.T, db *DB, code string) ordersync.SyncInfo {
	t.Helper()
	m, err := db.FindOrderByCode(context.Background(), ordersync.DefaultAccount, code)
	if err != nil {
		t.Fatalf("FindOrderByCode(%s): %v", code, err)
	}
	return m.Sync
}

func wantTime(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestPaidAt(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		fetchTime := func(seq int64) time.Time { return fetched(nil, seq).FetchedAt }
		base := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)

		// The announcing webhook's receipt, the fetch after it later.
		paidHook := base.Add(1500 * time.Millisecond)
		apply(t, db, fetched(orderDoc(t, "hook", 1, ordersync.StatusPending), 1, webhook("hook", ordersync.EventCreated, base)))
		if s := syncOf(t, db, "hook"); s.PaidAt != nil {
			t.Errorf("a pending order has paidAt %v", s.PaidAt)
		}
		apply(t, db, fetched(orderDoc(t, "hook", 1, ordersync.StatusPaid), 2, webhook("hook", ordersync.EventSuccessPayment, paidHook)))
		s := syncOf(t, db, "hook")
		wantTime(t, "hook paidAt", s.PaidAt, paidHook)
		wantTime(t, "hook statusChangedAt", s.StatusChangedAt, fetchTime(2))

		// A webhook whose fetch still saw the order pending announced the
		// payment: the later fetch that sees it PAID takes its receipt.
		early := base.Add(3 * time.Second)
		apply(t, db, fetched(orderDoc(t, "lag", 2, ordersync.StatusPending), 3))
		apply(t, db, fetched(orderDoc(t, "lag", 2, ordersync.StatusPending, func(doc map[string]any) { doc["description"] = "touched" }), 4,
			webhook("lag", ordersync.EventSuccessPayment, early)))
		if s := syncOf(t, db, "lag"); s.PaidAt != nil {
			t.Errorf("lag is pending but has paidAt %v", s.PaidAt)
		}
		apply(t, db, fetched(orderDoc(t, "lag", 2, ordersync.StatusPaid), 5))
		wantTime(t, "lag paidAt", syncOf(t, db, "lag").PaidAt, early)

		// No webhook: the fetch that first saw it paid.
		apply(t, db, fetched(orderDoc(t, "fetch", 3, ordersync.StatusPending), 6))
		apply(t, db, fetched(orderDoc(t, "fetch", 3, ordersync.StatusPaid), 7))
		wantTime(t, "fetch paidAt", syncOf(t, db, "fetch").PaidAt, fetchTime(7))

		// Later fetches, a later webhook and a reversal never move it; the
		// status change time follows the last change only.
		apply(t, db, fetched(orderDoc(t, "fetch", 3, ordersync.StatusFinalized), 8, webhook("fetch", ordersync.EventFinalized, base)))
		s = syncOf(t, db, "fetch")
		wantTime(t, "fetch paidAt after FINALIZED", s.PaidAt, fetchTime(7))
		wantTime(t, "fetch statusChangedAt after FINALIZED", s.StatusChangedAt, fetchTime(8))
		apply(t, db, fetched(orderDoc(t, "fetch", 3, ordersync.StatusCancelled), 9, webhook("fetch", ordersync.EventSuccessReverse, base)))
		apply(t, db, fetched(orderDoc(t, "fetch", 3, ordersync.StatusCancelled, func(doc map[string]any) { doc["description"] = "after" }), 10))
		s = syncOf(t, db, "fetch")
		wantTime(t, "fetch paidAt after the reversal", s.PaidAt, fetchTime(7))
		wantTime(t, "fetch statusChangedAt after a change of document alone", s.StatusChangedAt, fetchTime(9))

		// First seen FINALIZED: its Finalized webhook, or the fetch.
		finalHook := base.Add(4 * time.Second)
		apply(t, db,
			fetched(orderDoc(t, "final", 4, ordersync.StatusFinalized), 11, webhook("final", ordersync.EventFinalized, finalHook)),
			fetched(orderDoc(t, "final2", 5, ordersync.StatusFinalized), 12))
		wantTime(t, "final paidAt", syncOf(t, db, "final").PaidAt, finalHook)
		wantTime(t, "final2 paidAt", syncOf(t, db, "final2").PaidAt, fetchTime(12))

		// A webhook received after the fetch that saw the order paid told
		// ordersync nothing new.
		apply(t, db, fetched(orderDoc(t, "late", 6, ordersync.StatusPaid), 13, webhook("late", ordersync.EventSuccessPayment, fetchTime(13).Add(time.Second))))
		wantTime(t, "late paidAt", syncOf(t, db, "late").PaidAt, fetchTime(13))

		// The PAID trigger's payload carries the same times.
		for _, msg := range outboxFor(t, db, "hook") {
			if msg.Subject != ordersync.SubjectPaid {
				continue
			}
			var payload struct {
				Sync struct {
					PaidAt          *time.Time `json:"paidAt"`
					StatusChangedAt *time.Time `json:"statusChangedAt"`
				} `json:"sync"`
			}
			if err := json.Unmarshal(msg.Payload, &payload); err != nil {
				t.Fatal(err)
			}
			wantTime(t, "PAID payload paidAt", payload.Sync.PaidAt, paidHook)
			wantTime(t, "PAID payload statusChangedAt", payload.Sync.StatusChangedAt, fetchTime(2))
		}
	})
}

// TestMigrationPaidAt makes a mirror the way version 7 did (no paid_at),
// migrates it up and checks the times the migration fills from the status
// history.
func TestMigrationPaidAt(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDBAt(t, url, 7)

		at := func(minute int) time.Time { return time.Date(2026, 3, 1, 10, minute, 0, 0, time.UTC) }
		type change struct {
			from, to ordersync.Status
			minute   int
		}
		orders := map[string][]change{
			"pending":   {{"", ordersync.StatusPending, 1}},
			"paid":      {{"", ordersync.StatusPending, 1}, {ordersync.StatusPending, ordersync.StatusPaid, 5}},
			"finalized": {{"", ordersync.StatusPending, 1}, {ordersync.StatusPending, ordersync.StatusPaid, 6}, {ordersync.StatusPaid, ordersync.StatusFinalized, 9}},
			"onlyfinal": {{"", ordersync.StatusFinalized, 7}},
			"reversed":  {{"", ordersync.StatusPaid, 2}, {ordersync.StatusPaid, ordersync.StatusCancelled, 8}},
			"cancelled": {{"", ordersync.StatusPending, 3}, {ordersync.StatusPending, ordersync.StatusCancelled, 4}},
		}
		seq := 0
		for code, changes := range orders {
			var id int64
			last := changes[len(changes)-1]
			if err := db.write.QueryRowx(db.rebind(`INSERT INTO orders (account, order_code, status, raw_document, first_seen_at, paid_fired)
VALUES (?, ?, ?, '{}', ?, ?) RETURNING id`), ordersync.DefaultAccount, code, string(last.to), dbTime(at(0)), code != "pending" && code != "cancelled").Scan(&id); err != nil {
				t.Fatalf("insert order %s at version 7: %v", code, err)
			}
			for _, c := range changes {
				seq++
				if _, err := db.write.Exec(db.rebind(`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause) VALUES (?, ?, ?, ?, ?, 'webhook')`),
					id, string(c.from), string(c.to), seq, dbTime(at(c.minute))); err != nil {
					t.Fatalf("insert history of %s at version 7: %v", code, err)
				}
			}
		}
		// A placeholder has no history and gets neither time.
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "placeholder", ID: "99"}); err != nil {
			t.Fatal(err)
		}

		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
		type times struct {
			PaidAt          *time.Time `db:"paid_at"`
			StatusChangedAt *time.Time `db:"status_changed_at"`
		}
		want := map[string]struct{ paid, changed int }{
			"pending": {-1, 1}, "paid": {5, 5}, "finalized": {6, 9}, "onlyfinal": {7, 7}, "reversed": {2, 8}, "cancelled": {-1, 4}, "placeholder": {-1, -1},
		}
		for code, w := range want {
			var got times
			if err := db.read.Get(&got, db.rebind(`SELECT paid_at, status_changed_at FROM orders WHERE account = ? AND order_code = ?`), ordersync.DefaultAccount, code); err != nil {
				t.Fatalf("read %s: %v", code, err)
			}
			check := func(what string, got *time.Time, minute int) {
				if minute < 0 {
					if got != nil {
						t.Errorf("%s %s = %v, want NULL", code, what, got)
					}
					return
				}
				wantTime(t, code+" "+what, got, at(minute))
			}
			check("paid_at", got.PaidAt, w.paid)
			check("status_changed_at", got.StatusChangedAt, w.changed)
		}

		// The migrated paid_at is never moved by a later fetch.
		apply(t, db, fetched(orderDoc(t, "paid", 2, ordersync.StatusFinalized), int64(seq+1)))
		s := syncOf(t, db, "paid")
		wantTime(t, "paid paidAt after a fetch", s.PaidAt, at(5))
		wantTime(t, "paid statusChangedAt after a fetch", s.StatusChangedAt, fetched(nil, int64(seq+1)).FetchedAt)
	})
}
