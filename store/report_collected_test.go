package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestMigrationReportCollected checks that migration 31 counts the
// collected figure of the orders indexed before it, and that the indexer
// counts it for those changed meanwhile: after it, the report's sums give
// what reading the orders one by one gives; its Down takes the figure out.
func TestMigrationReportCollected(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		apply(t, db,
			fetched(orderDoc(t, "c1", 301, ordersync.StatusPaid), 1),
			fetched(orderDoc(t, "c2", 302, ordersync.StatusPaid), 2),
			fetched(orderDoc(t, "c3", 303, ordersync.StatusFinalized), 3))
		if _, err := db.IndexNow(ctx); err != nil {
			t.Fatal(err)
		}
		_, unlock := migrateDownTo(t, db, 30)
		unlock()
		var n int
		if err := db.read.Get(&n, `SELECT COUNT(*) FROM report_buckets WHERE figure = 'collected'`); err != nil || n != 0 {
			t.Fatalf("at version 30, %d collected buckets (%v)", n, err)
		}
		// Reversed and paid while version 30 ran: the indexer counts them.
		// This release's apply writes the column migration 37 adds to the
		// document changes, so it has that column (only) meanwhile.
		if _, err := db.write.ExecContext(ctx, `ALTER TABLE document_changes ADD COLUMN order_row BIGINT`); err != nil {
			t.Fatal(err)
		}
		apply(t, db, fetched(orderDoc(t, "c2", 302, ordersync.StatusCancelled), 4),
			fetched(orderDoc(t, "c4", 304, ordersync.StatusPaid), 5))
		if _, err := db.write.ExecContext(ctx, `ALTER TABLE document_changes DROP COLUMN order_row`); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.IndexNow(ctx); err != nil {
			t.Fatal(err)
		}
		var paid []time.Time
		if err := db.read.Select(&paid, `SELECT paid_at FROM orders WHERE paid_at IS NOT NULL`); err != nil || len(paid) == 0 {
			t.Fatalf("paid times %v, %v", paid, err)
		}
		from := paid[0].UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
		params := ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: from.AddDate(0, 0, 3), Location: time.UTC}
		got, err := db.dailyTotals(ctx, params, true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := db.dailyTotals(ctx, params, false)
		if err != nil {
			t.Fatal(err)
		}
		collected := 0
		for _, d := range got.Days {
			collected += d.Collected.Count
		}
		if collected != 3 || !reflect.DeepEqual(got, want) {
			t.Errorf("after migration 31, the sums say %+v (%d collected, want 3), the orders %+v", got, collected, want)
		}
	})
}
