package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestReportBucketsFollowWrites checks, on both dialects, that the daily
// report read from report_buckets (migration 00018) is the report read
// from the orders one by one after each kind of write the triggers must
// follow: new orders (pending, paid, finalized and cancelled at once, in
// currencies of 0, 2 and 3 decimals and one this binary does not know, and
// a total no integer says), status changes, total changes, paid times
// changed under a cancellation, a refetch that changes nothing, and an
// order's removal.
func TestReportBucketsFollowWrites(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		from, _ := ordersync.ParseDate("2026-10-01")
		to, _ := ordersync.ParseDate("2026-10-20")
		seq := int64(0)
		// put fetches the order with the status and total at the time.
		put := func(code string, id int, status ordersync.Status, total, currency string, at time.Time, events ...ordersync.EventRecord) {
			t.Helper()
			seq++
			p := fetched(orderDoc(t, code, id, status, func(doc map[string]any) {
				doc["created"] = "2026-10-05T23:50:00.000Z"
				doc["total"] = json.Number(total)
				doc["store"].(map[string]any)["currencyCode"] = currency
			}), seq, events...)
			p.FetchedAt = at
			apply(t, db, p)
		}
		// mark marks an order changed by a write outside the apply, as such
		// a write must for the indexer; changed runs the indexer too.
		mark := func(code string) {
			t.Helper()
			if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO mirror_changes (order_row, at) SELECT id, ? FROM orders WHERE order_code = ?`),
				dbTime(time.Now()), code); err != nil {
				t.Fatal(err)
			}
		}
		changed := func(code string) {
			t.Helper()
			mark(code)
			indexNow(t, db)
		}
		buckets := func() string {
			t.Helper()
			var rows []struct {
				Bucket   int64  `db:"bucket"`
				Figure   string `db:"figure"`
				Currency string `db:"currency"`
				Summed   int64  `db:"summed"`
				Minor    int64  `db:"total_minor"`
				Unsummed int64  `db:"unsummed"`
			}
			if err := db.read.Select(&rows, `SELECT bucket, figure, currency, summed, total_minor, unsummed FROM report_buckets
WHERE summed <> 0 OR total_minor <> 0 OR unsummed <> 0 ORDER BY bucket, figure, currency`); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(rows)
		}
		// check compares the two reports in UTC and in New York, and wants
		// each figure named to count something.
		check := func(step string, figures ...string) {
			t.Helper()
			for _, loc := range []*time.Location{time.UTC, ny} {
				params := ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to, Location: loc}
				want, err := db.dailyTotals(ctx, params, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := db.dailyTotals(ctx, params, true)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, %s: from report_buckets\n%+v\nfrom the orders\n%+v", step, loc, got, want)
				}
				counts := map[string]int{}
				for _, d := range want.Days {
					counts["created"] += d.Created.Count
					counts["paid"] += d.Paid.Count
					counts["cancelled"] += d.Cancelled.Count
					counts["finalized"] += d.Finalized.Count
					counts["reversed"] += d.Reversed.Count
				}
				for _, f := range figures {
					if counts[f] == 0 {
						t.Fatalf("%s, %s: nothing %s (%v)", step, loc, f, counts)
					}
				}
			}
		}
		day := time.Date(2026, 10, 6, 12, 0, 0, 0, time.UTC)

		put("pend", 1, ordersync.StatusPending, "10.00", "USD", day)
		put("paid", 2, ordersync.StatusPaid, "3.25", "USD", day, webhook("paid", ordersync.EventSuccessPayment, day.Add(-3*time.Hour)))
		put("fin", 3, ordersync.StatusFinalized, "7", "JPY", day)
		put("cx", 4, ordersync.StatusCancelled, "1.500", "KWD", day)
		put("odd", 5, ordersync.StatusPaid, "1.005", "USD", day)    // no total_minor
		put("zzz", 6, ordersync.StatusPaid, "2.5", "ZZZ", day)      // a currency not known
		put("late", 7, ordersync.StatusPending, "4.00", "EUR", day) // paid later, after a cancellation
		check("new orders", "created", "paid", "finalized", "cancelled")

		next := day.Add(26 * time.Hour)
		put("pend", 1, ordersync.StatusPaid, "10.00", "USD", next)
		put("paid", 2, ordersync.StatusCancelled, "3.25", "USD", next)
		put("odd", 5, ordersync.StatusFinalized, "1.005", "USD", next)
		put("zzz", 6, ordersync.StatusCancelled, "2.5", "ZZZ", next)
		put("late", 7, ordersync.StatusCancelled, "4.00", "EUR", next)
		check("status changes", "created", "paid", "finalized", "cancelled", "reversed")

		before := buckets()
		put("pend", 1, ordersync.StatusPaid, "10.00", "USD", next.Add(time.Hour))
		put("fin", 3, ordersync.StatusFinalized, "7", "JPY", next.Add(time.Hour))
		if after := buckets(); after != before {
			t.Fatalf("a refetch that changes nothing changed report_buckets:\n%s\nto\n%s", before, after)
		}
		check("refetch", "created", "paid", "finalized", "cancelled", "reversed")

		third := next.Add(30 * time.Hour)
		put("pend", 1, ordersync.StatusPaid, "12.50", "USD", third)
		put("fin", 3, ordersync.StatusFinalized, "9", "JPY", third)
		put("odd", 5, ordersync.StatusFinalized, "1.01", "USD", third)  // now an integer says it
		put("cx", 4, ordersync.StatusCancelled, "1.5005", "KWD", third) // and this one no longer
		check("total changes", "created", "paid", "finalized", "cancelled", "reversed")

		// A payment learned for an order cancelled before it (the
		// cancellation then counts as neither), and one moved before its
		// cancellation (now a reversal), by whatever writes paid_at.
		for _, c := range []struct {
			code string
			at   time.Time
		}{{"late", next.Add(2 * time.Hour)}, {"late", day}, {"paid", day.Add(-30 * time.Minute)}, {"paid", next.Add(time.Hour)}} {
			if _, err := db.write.ExecContext(ctx, db.rebind(`UPDATE orders SET paid_at = ? WHERE order_code = ?`), dbTime(c.at), c.code); err != nil {
				t.Fatal(err)
			}
			changed(c.code)
			check("paid_at of "+c.code+" to "+c.at.Format(time.RFC3339), "created", "paid", "finalized")
		}

		mark("fin")
		if _, err := db.write.ExecContext(ctx, db.rebind(`DELETE FROM orders WHERE order_code = ?`), "fin"); err != nil {
			t.Fatal(err)
		}
		indexNow(t, db)
		check("an order removed", "created", "paid", "finalized")
	})
}
