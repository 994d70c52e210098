package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// cancelParams is one new order, code, for the cancellation tests.
func cancelParams(t *testing.T, i int, code string) []ordersync.ApplyParams {
	t.Helper()
	o, err := ordersync.DecodeOrder(fmt.Appendf(nil, benchDoc, i, code, code, code, "cancel", ordersync.StatusPending, i, code))
	if err != nil {
		t.Fatal(err)
	}
	return []ordersync.ApplyParams{{Account: "default", Order: o, Seq: int64(i), Cause: ordersync.CauseWebhook,
		Events: []ordersync.EventRecord{{MsgID: "msg-" + code, Type: ordersync.EventCreated}}}}
}

func countOrder(t *testing.T, db *DB, code string) int {
	t.Helper()
	var n int
	if err := db.read.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM orders WHERE account = ? AND order_code = ?`, "default", code); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestApplyCancelledMidwayCommits: on SQLite an apply that has begun
// commits even when its context ends while it waits, so the drain's last
// commits are kept; it stays bounded by the busy timeout, not by ctx.
func TestApplyCancelledMidwayCommits(t *testing.T) {
	url := sqliteURL(t)
	db := openDB(t, url)
	// The first apply prepares the writes; the one under test then holds
	// the write connection only for its transaction.
	if _, err := db.ApplyOrders(context.Background(), cancelParams(t, 1, "warm")); err != nil {
		t.Fatal(err)
	}

	// Another connection takes the write lock, so the apply waits in its
	// BEGIN IMMEDIATE.
	other, err := sql.Open("sqlite3", strings.TrimPrefix(url, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := db.ApplyOrders(ctx, cancelParams(t, 2, "midway"))
		done <- err
	}()
	// The apply holds the write connection once its transaction begins.
	for db.write.Stats().InUse == 0 {
		time.Sleep(time.Millisecond) // polls; decides nothing
	}
	cancel()
	if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("an apply cancelled midway: %v, want it committed", err)
	}
	if n := countOrder(t, db, "midway"); n != 1 {
		t.Errorf("the order is mirrored %d times after the apply, want 1", n)
	}
}

// TestApplyCancelledBeforeWritesNothing: an apply whose context has ended
// before it begins returns the context's error and writes nothing.
func TestApplyCancelledBeforeWritesNothing(t *testing.T) {
	db := openDB(t, sqliteURL(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.ApplyOrders(ctx, cancelParams(t, 1, "late")); !errors.Is(err, context.Canceled) {
		t.Fatalf("ApplyOrders after cancel: %v, want context.Canceled", err)
	}
	if n := countOrder(t, db, "late"); n != 0 {
		t.Errorf("the order is mirrored %d times, want 0", n)
	}
}
