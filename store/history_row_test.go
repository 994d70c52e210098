package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestDocumentChangesByRow: migration 37 keys document changes by their
// order's row. The changes an earlier release wrote (by store and order
// code only) stay in the order's history beside the new ones, newest
// first, and another store's order of the same code keeps its own; both
// kinds are read from their index, not a scan (SQLite's plan).
func TestDocumentChangesByRow(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		fetch := func(account string, i int) {
			t.Helper()
			o, err := ordersync.DecodeOrder(fmt.Appendf(nil, `{"orderId":1,"orderCode":"dc1","orderStatus":"PENDING","name":"v%d"}`, i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: account, Order: o, Seq: int64(i + 1),
				FetchedAt: testNow.Add(time.Duration(i) * time.Hour), Cause: ordersync.CauseReconcile}}); err != nil {
				t.Fatal(err)
			}
		}
		fetch("default", 0)
		fetch("second", 0)
		_, unlock := migrateDownTo(t, db, migrationVersion(t, db, "document_changes_row")-1)
		unlock()
		for _, account := range []string{"default", "second"} {
			if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO document_changes (account, order_code, at, cause, fields)
VALUES (?, 'dc1', ?, 'reconcile', '["Name"]')`), account, dbTime(testNow.Add(time.Hour))); err != nil {
				t.Fatalf("record a change the earlier way: %v", err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		fetch("default", 2)
		fetch("default", 3)

		var unkeyed int
		if err := db.read.GetContext(ctx, &unkeyed, `SELECT COUNT(*) FROM document_changes WHERE order_row IS NULL`); err != nil || unkeyed != 2 {
			t.Fatalf("%d changes without their row (%v), want the 2 written before the migration", unkeyed, err)
		}
		at := func(account string) []time.Time {
			t.Helper()
			h, err := db.FindOrderHistory(ctx, account, "dc1", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Time
			for _, c := range h.DocumentChanges {
				got = append(got, c.At)
			}
			return got
		}
		if got, want := at("default"), []time.Time{testNow.Add(3 * time.Hour), testNow.Add(2 * time.Hour), testNow.Add(time.Hour)}; !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("default's changes at %v, want %v", got, want)
		}
		if got, want := at("second"), []time.Time{testNow.Add(time.Hour)}; !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("second's changes at %v, want %v", got, want)
		}

		if db.dialect == DialectPostgres {
			return // its planner scans a table this small whatever indexes it has
		}
		plan := strings.Join(explain(t, db, orderChangesQuery, 1, "default", "dc1", 100), "\n")
		for _, index := range []string{"document_changes_row", "document_changes_order"} {
			if !strings.Contains(plan, index) {
				t.Errorf("the history's changes are read without %s:\n%s", index, plan)
			}
		}
	})
}
