package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// TestOutboxSentByPosition: marking every unsent message above
// the last position up to the greatest of them adds one position and
// rewrites no message's row; messages marked out of that order (one left
// between, an unknown id) get their sent_at as before. Either way the
// messages are no longer pending nor unsent, and their history says when
// they were sent; a mirror marked the old way goes on from where it was.
func TestOutboxSentByPosition(t *testing.T) {
	eachDialect(t, testOutboxSentByPosition)
}

func testOutboxSentByPosition(t *testing.T, url string) {
	db := openDB(t, url)
	ctx := context.Background()
	for i := range 6 {
		apply(t, db, fetched(orderDoc(t, fmt.Sprintf("pos%d", i), i+1, ordersync.StatusPending), int64(i+1)))
	}
	msgs, err := db.PendingOutbox(ctx, 10)
	if err != nil || len(msgs) != 6 {
		t.Fatalf("PendingOutbox = %d messages, %v; want 6", len(msgs), err)
	}
	ids := func(ms []ordersync.OutboxMessage) []int64 {
		out := make([]int64, len(ms))
		for i, m := range ms {
			out[i] = m.ID
		}
		return out
	}
	count := func(query string) int {
		t.Helper()
		var n int
		if err := db.read.Get(&n, query); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rowsMarked := func() int { return count(`SELECT COUNT(*) FROM outbox WHERE sent_at IS NOT NULL`) }
	positions := func() int { return count(`SELECT COUNT(*) FROM outbox_marks`) }

	// The first one the old way: a message left unsent before it, then
	// an unknown id with it.
	if err := db.MarkOutboxSent(ctx, []int64{msgs[1].ID}, testNow); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkOutboxSent(ctx, []int64{msgs[0].ID, msgs[5].ID + 100}, testNow.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, want := rowsMarked(), 2; got != want || positions() != 0 {
		t.Fatalf("out of order: %d rows marked and %d positions, want %d and none", got, positions(), want)
	}
	// Then every unsent one above, in two rounds: two positions, no row.
	sentAt := testNow.Add(2 * time.Minute)
	if err := db.MarkOutboxSent(ctx, ids(msgs[2:4]), sentAt); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkOutboxSent(ctx, ids(msgs[4:]), sentAt.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := rowsMarked(); got != 2 || positions() != 2 {
		t.Errorf("in order: %d rows marked and %d positions, want still 2 rows and 2 positions", got, positions())
	}
	// Marking again changes nothing.
	if err := db.MarkOutboxSent(ctx, ids(msgs), testNow.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if pending, err := db.PendingOutbox(ctx, 10); err != nil || len(pending) != 0 {
		t.Errorf("pending after marking all: %d, %v; want none", len(pending), err)
	}
	ov, err := db.Overview(ctx, ordersync.OverviewParams{Account: ordersync.DefaultAccount, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if ov.Unsent != 0 || ov.OldestUnsent != nil {
		t.Errorf("overview: %d unsent, oldest %+v; want none", ov.Unsent, ov.OldestUnsent)
	}
	for i, want := range []time.Time{testNow.Add(time.Minute), testNow, sentAt, sentAt, sentAt.Add(time.Minute), sentAt.Add(time.Minute)} {
		h, err := db.FindOrderHistory(ctx, ordersync.DefaultAccount, fmt.Sprintf("pos%d", i), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Messages) != 1 || h.Messages[0].SentAt == nil || !h.Messages[0].SentAt.Equal(want) {
			t.Errorf("order pos%d: history's messages %+v, want one sent at %v", i, h.Messages, want)
		}
	}

	// A message committed after the positions is pending, then marked by
	// one more.
	apply(t, db, fetched(orderDoc(t, "pos6", 7, ordersync.StatusPending), 7))
	pending, err := db.PendingOutbox(ctx, 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending after a new message: %d, %v; want 1", len(pending), err)
	}
	if err := db.MarkOutboxSent(ctx, ids(pending), sentAt); err != nil {
		t.Fatal(err)
	}
	if got := rowsMarked(); got != 2 || positions() != 3 {
		t.Errorf("the new message: %d rows marked and %d positions, want 2 and 3", got, positions())
	}

	// Pruning all drops the positions no message is left under but the
	// last, which still says how far the outbox was sent.
	if n, err := db.PruneSentOutbox(ctx, testNow.Add(1000*time.Hour), 100); err != nil || n != 7 {
		t.Fatalf("PruneSentOutbox of all = %d, %v; want 7", n, err)
	}
	if got := positions(); got != 1 {
		t.Errorf("%d positions after pruning all, want the last one", got)
	}
	apply(t, db, fetched(orderDoc(t, "pos7", 8, ordersync.StatusPending), 8))
	pending, err = db.PendingOutbox(ctx, 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending after pruning and a new message: %d, %v; want 1", len(pending), err)
	}
	if err := db.MarkOutboxSent(ctx, ids(pending), sentAt); err != nil {
		t.Fatal(err)
	}

	// Going down to the schema before positions writes each message's
	// sent_at from its position.
	provider, unlock, err := db.migrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := provider.DownTo(ctx, 24); err != nil {
		t.Fatalf("migrate down to 24: %v", err)
	}
	if got := count(`SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL`); got != 0 {
		t.Errorf("after migrating down, %d messages without sent_at, want none", got)
	}
}

// TestOutboxIdsCommitInOrder: on PostgreSQL a message that took its id
// before another one committed after it is never passed by a position.
// A writer holds its message uncommitted while an apply queues another
// message; the relay marks what is pending meanwhile, and after both
// commit, the first writer's message is still pending.
func TestOutboxIdsCommitInOrder(t *testing.T) {
	t.Parallel()
	db := openDB(t, postgresURL(t))
	ctx := context.Background()
	apply(t, db, fetched(orderDoc(t, "early", 1, ordersync.StatusPending), 1))
	sent := func() {
		t.Helper()
		pending, err := db.PendingOutbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(pending))
		for i, m := range pending {
			ids[i] = m.ID
		}
		if err := db.MarkOutboxSent(ctx, ids, testNow); err != nil {
			t.Fatal(err)
		}
	}
	sent()

	// The first writer, as writeBatch writes its messages: locked, then
	// inserted, not yet committed.
	tx, err := db.write.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := db.lockOutbox(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (order_row, account, order_code, subject, msg_id, payload, created_at, from_status)
SELECT id, account, order_code, 'ordersync.test', 'held', '{}', $1, '' FROM orders WHERE order_code = 'early'`, testNow); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{fetched(orderDoc(t, "late", 2, ordersync.StatusPending), 2)})
		done <- err
	}()
	// The apply either waits for the first writer (the lock) or commits.
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			done <- err
			waiting = true
		default:
			var n int
			if err := db.read.GetContext(ctx, &n, `SELECT COUNT(*) FROM pg_locks WHERE NOT granted AND relation = 'outbox'::regclass`); err != nil {
				t.Fatal(err)
			}
			waiting = n > 0
			if !waiting {
				time.Sleep(time.Millisecond) // polls a condition; decides no order
			}
		}
	}
	sent()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pending, err := db.PendingOutbox(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var held bool
	for _, m := range pending {
		held = held || m.MsgID == "held"
	}
	if !held {
		t.Errorf("pending after both writers committed: %+v; want the first writer's message among them", pending)
	}
}

// TestOutboxOldWritersNotPassed: on PostgreSQL, during a rolling upgrade,
// two writers of a release without lockOutbox may commit their messages
// out of id order. While the one with the smaller id is uncommitted, the
// relay marks the other by its row, not by a position that would pass
// the first; once it commits, it is pending and then marked by position.
func TestOutboxOldWritersNotPassed(t *testing.T) {
	t.Parallel()
	db := openDB(t, postgresURL(t))
	ctx := context.Background()
	apply(t, db, fetched(orderDoc(t, "old", 1, ordersync.StatusPending), 1))
	pendingIDs := func() ([]int64, []string) {
		t.Helper()
		pending, err := db.PendingOutbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids, msgIDs := make([]int64, len(pending)), make([]string, len(pending))
		for i, m := range pending {
			ids[i], msgIDs[i] = m.ID, m.MsgID
		}
		return ids, msgIDs
	}
	sent := func() {
		t.Helper()
		ids, _ := pendingIDs()
		if err := db.MarkOutboxSent(ctx, ids, testNow); err != nil {
			t.Fatal(err)
		}
	}
	sent()
	// An old writer's insert: no lock, as releases before lockOutbox wrote.
	oldWrite := func(msgID string) *sqlx.Tx {
		t.Helper()
		tx, err := db.write.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (order_row, account, order_code, subject, msg_id, payload, created_at, from_status)
SELECT id, account, order_code, 'ordersync.test', $1, '{}', $2, '' FROM orders WHERE order_code = 'old'`, msgID, testNow); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	first := oldWrite("first")
	defer first.Rollback()
	if err := oldWrite("second").Commit(); err != nil {
		t.Fatal(err)
	}
	if _, msgIDs := pendingIDs(); len(msgIDs) != 1 || msgIDs[0] != "second" {
		t.Fatalf("pending with the first uncommitted: %v; want the second", msgIDs)
	}
	sent()
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, msgIDs := pendingIDs(); len(msgIDs) != 1 || msgIDs[0] != "first" {
		t.Fatalf("pending after the first committed: %v; want it", msgIDs)
	}
	var positions int
	if err := db.read.GetContext(ctx, &positions, `SELECT COUNT(*) FROM outbox_marks`); err != nil {
		t.Fatal(err)
	}
	sent()
	var after int
	if err := db.read.GetContext(ctx, &after, `SELECT COUNT(*) FROM outbox_marks`); err != nil {
		t.Fatal(err)
	}
	if after != positions+1 {
		t.Errorf("positions %d after marking with no old writer left, want %d", after, positions+1)
	}
}
