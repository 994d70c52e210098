package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestOutboxWrittenTheOldWay checks outbox messages as 560ec5f's schema
// (version 21) left them, some marked sent row by row, some unsent, with
// no trace parent: after the migrations the relay is handed exactly the
// unsent ones, in order, with their payload's bytes, subject, message id
// and previous status as written, beside messages written the new way;
// marking them all sent (by one position on SQLite, over rows marked the
// old way) leaves none pending and each order's history says when.
// The INSERT is spelled out as 560ec5f wrote it, on purpose.
func TestOutboxWrittenTheOldWay(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDBAt(t, url, 21)
		at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
		for _, code := range []string{"up-a", "up-b", "up-c"} {
			if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO orders (account, order_code, status, raw_document, first_seen_at) VALUES (?, ?, ?, ?, ?)`),
				ordersync.DefaultAccount, code, string(ordersync.StatusPending), `{"orderCode":"`+code+`"}`, dbTime(at)); err != nil {
				t.Fatalf("an order at version 21: %v", err)
			}
		}
		var orders []struct {
			ID   int64  `db:"id"`
			Code string `db:"order_code"`
		}
		if err := db.read.SelectContext(ctx, &orders, `SELECT id, order_code FROM orders ORDER BY id`); err != nil || len(orders) != 3 {
			t.Fatalf("%d orders at version 21: %v", len(orders), err)
		}
		old := []struct {
			order   int
			subject string
			msgID   string
			from    ordersync.Status
			payload string
			sent    bool
		}{
			{0, ordersync.SubjectStatusPrefix + "PENDING", ":status:PENDING:1", "", `{"orderCode":"a","orderStatus":"PENDING"}`, true},
			{0, ordersync.SubjectPaid, ":paid", ordersync.StatusPending, `{"orderCode":"a", "name":"Peña \u2028 <b>","orderStatus":"PAID"}`, false},
			{1, ordersync.SubjectStatusPrefix + "PENDING", ":status:PENDING:1", "", "{\"orderCode\":\"b\",\n \"emoji\":\"😀\"}", false},
			{2, ordersync.SubjectStatusPrefix + "CANCELLED", ":status:CANCELLED:2", ordersync.StatusPending, `{"orderCode":"c"}`, true},
		}
		for i, m := range old {
			o := orders[m.order]
			var sentAt any
			if m.sent {
				sentAt = dbTime(at.Add(time.Minute))
			}
			if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO outbox (order_row, account, order_code, subject, msg_id, payload, created_at, from_status, sent_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), o.ID, ordersync.DefaultAccount, o.Code, m.subject, ordersync.DefaultAccount+":"+o.Code+m.msgID, []byte(m.payload),
				dbTime(at.Add(time.Duration(i)*time.Second)), string(m.from), sentAt); err != nil {
				t.Fatalf("an outbox message as version 21 wrote it: %v", err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up from 21: %v", err)
		}
		apply(t, db, fetched(orderDoc(t, "new1", 901, ordersync.StatusPending), 100))

		pending, err := db.PendingOutbox(ctx, 10)
		if err != nil {
			t.Fatalf("PendingOutbox: %v", err)
		}
		if len(pending) != 3 {
			ids := make([]string, len(pending))
			for i, m := range pending {
				ids[i] = m.MsgID
			}
			t.Fatalf("pending %q, want the 2 unsent old messages and the new one", ids)
		}
		for i, want := range []int{1, 2} {
			m, o, got := old[want], orders[old[want].order], pending[i]
			if got.Account != ordersync.DefaultAccount || got.OrderCode != o.Code || got.Subject != m.subject ||
				got.MsgID != ordersync.DefaultAccount+":"+o.Code+m.msgID || got.From != m.from || got.TraceParent != "" ||
				!got.CreatedAt.Equal(at.Add(time.Duration(want)*time.Second)) || !bytes.Equal(got.Payload, []byte(m.payload)) {
				t.Errorf("pending %d = %s %s from %q at %v, trace %q, payload %s; want old message %d as written",
					i, got.MsgID, got.Subject, got.From, got.CreatedAt, got.TraceParent, got.Payload, want)
			}
		}
		if pending[2].OrderCode != "new1" || pending[2].ID <= pending[1].ID {
			t.Errorf("pending 2 = %s (id %d), want new1's message after the old ones", pending[2].OrderCode, pending[2].ID)
		}

		sentAt := at.Add(time.Hour)
		if err := db.MarkOutboxSent(ctx, []int64{pending[0].ID, pending[1].ID, pending[2].ID}, sentAt); err != nil {
			t.Fatalf("MarkOutboxSent: %v", err)
		}
		if again, err := db.PendingOutbox(ctx, 10); err != nil || len(again) != 0 {
			t.Errorf("pending after marking all: %d, %v; want none", len(again), err)
		}
		h, err := db.FindOrderHistory(ctx, ordersync.DefaultAccount, orders[0].Code, 10)
		if err != nil {
			t.Fatal(err)
		}
		sent := map[string]time.Time{}
		for _, m := range h.Messages {
			if m.SentAt != nil {
				sent[m.MsgID] = *m.SentAt
			}
		}
		first, paid := ordersync.DefaultAccount+":"+orders[0].Code+old[0].msgID, ordersync.DefaultAccount+":"+orders[0].Code+old[1].msgID
		if len(h.Messages) != 2 || !sent[first].Equal(at.Add(time.Minute)) || !sent[paid].Equal(sentAt) {
			t.Errorf("%s's history: %d messages, sent %v; want %s sent at %v and %s at %v",
				orders[0].Code, len(h.Messages), sent, first, at.Add(time.Minute), paid, sentAt)
		}
	})
}
