package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// TestIndexerBehindSaysAsOf: until the indexer takes a write, the daily
// totals say they are behind and as of when, and show the figures from
// before the write, never a part of it; search by name does not find the
// new order yet; the lag grows. Once indexed, all of it is current.
func TestIndexerBehindSaysAsOf(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		apply(t, db, fetched(orderDoc(t, "first", 1, ordersync.StatusPaid), 1)) // indexed
		from, _ := ordersync.ParseDate("2026-10-01")
		to, _ := ordersync.ParseDate("2026-10-31")
		params := ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to, Location: time.UTC}
		paid := func(r ordersync.DailyTotals) int {
			n := 0
			for _, d := range r.Days {
				n += d.Paid.Count
			}
			return n
		}
		before, err := db.DailyTotals(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if before.Behind || paid(before) != 1 || time.Since(before.AsOf) > time.Minute {
			t.Fatalf("indexed: behind %v, as of %s, %d paid; want current and 1", before.Behind, before.AsOf, paid(before))
		}

		written := time.Now()
		second := orderDoc(t, "second", 2, ordersync.StatusPaid, func(doc map[string]any) {
			doc["payment"].(map[string]any)["buyer"] = map[string]any{"name": "Zacarías Quintanilla", "phone": "+50370009999", "email": "zq@example.com"}
		})
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{fetched(second, 2)}); err != nil {
			t.Fatal(err)
		}
		behind, err := db.DailyTotals(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if !behind.Behind || behind.AsOf.After(written.Add(time.Second)) {
			t.Errorf("not indexed: behind %v, as of %s; want behind, as of the write at %s at the latest", behind.Behind, behind.AsOf, written)
		}
		if fmt.Sprint(behind.Days) != fmt.Sprint(before.Days) {
			t.Errorf("not indexed, the figures changed:\n%+v\nwant those as of before the write\n%+v", behind.Days, before.Days)
		}
		page, err := db.ListOrders(ctx, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: "zacarias", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Orders) != 0 || !page.Behind || page.AsOf.After(written.Add(time.Second)) {
			t.Errorf("not indexed, search by name found %d orders, behind %v as of %s; want none, behind, as of the write", len(page.Orders), page.Behind, page.AsOf)
		}
		time.Sleep(20 * time.Millisecond) // the lag is an age: let it be one
		status, err := db.IndexStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if status.Pending != 1 || status.Lag(time.Now()) < 20*time.Millisecond {
			t.Errorf("not indexed: %d pending, lag %s; want 1 and at least 20ms", status.Pending, status.Lag(time.Now()))
		}

		indexNow(t, db)
		after, err := db.DailyTotals(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if after.Behind || paid(after) != 2 || after.AsOf.Before(written.Truncate(time.Second)) {
			t.Errorf("indexed: behind %v, as of %s, %d paid; want current and 2", after.Behind, after.AsOf, paid(after))
		}
		page, err = db.ListOrders(ctx, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: "zacarias", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Orders) != 1 || page.Orders[0].Order.OrderCode != "second" || page.Behind {
			t.Errorf("indexed, search by name found %d orders (behind %v), want second, current", len(page.Orders), page.Behind)
		}
		if status, err := db.IndexStatus(ctx); err != nil || status.Behind() || status.Lag(time.Now()) != 0 || status.Position == 0 {
			t.Errorf("indexed: %+v, %v; want nothing pending and a position", status, err)
		}
	})
}

// TestRebuildReadSide empties the read side of a mirror with orders of
// every figure and names, rebuilds it from the mirror and gets the very
// tables (and so the same reports and searches) back.
func TestRebuildReadSide(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		seq := int64(0)
		for i, st := range []ordersync.Status{ordersync.StatusPending, ordersync.StatusPaid, ordersync.StatusFinalized, ordersync.StatusCancelled, ordersync.StatusPaid} {
			code := fmt.Sprintf("o%d", i)
			seq++
			apply(t, db, fetched(orderDoc(t, code, i+1, ordersync.StatusPending), seq))
			if st != ordersync.StatusPending {
				seq++
				apply(t, db, fetched(orderDoc(t, code, i+1, st), seq))
			}
		}
		read := func() string {
			t.Helper()
			var out string
			for _, q := range []string{
				`SELECT account, bucket, figure, currency, summed, total_minor, unsummed FROM report_buckets
WHERE summed <> 0 OR total_minor <> 0 OR unsummed <> 0 ORDER BY account, bucket, figure, currency`,
				`SELECT order_row, figure, account, bucket, currency, total_minor FROM report_order_figures ORDER BY order_row, figure`,
				`SELECT account, token, order_row, status, store_currency_code, created_at, paid_at, total_key FROM order_name_tokens ORDER BY order_row, token`,
			} {
				rows, err := db.read.QueryxContext(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					r, err := rows.SliceScan()
					if err != nil {
						t.Fatal(err)
					}
					out += fmt.Sprintln(r...)
				}
				rows.Close()
			}
			return out
		}
		want := read()
		if want == "" {
			t.Fatal("the read side is empty before the rebuild")
		}
		for _, q := range []string{`DELETE FROM report_buckets`, `DELETE FROM report_order_figures`, `DELETE FROM order_name_tokens`} {
			if _, err := db.write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if got := read(); got != "" {
			t.Fatalf("emptied, the read side holds\n%s", got)
		}
		n, err := db.RebuildReadSide(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != 5 {
			t.Errorf("rebuilt %d orders, want 5", n)
		}
		if got := read(); got != want {
			t.Errorf("rebuilt read side\n%s\nwant\n%s", got, want)
		}
		if db.dialect == DialectPostgres {
			// A restored mirror has no statistics; the rebuild gathers them.
			var analyzed bool
			q := `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'mirror_changes'`
			if err := db.read.GetContext(ctx, &analyzed, q); err != nil || !analyzed {
				t.Errorf("mirror_changes analyzed by the rebuild: %v, %v", analyzed, err)
			}
		}
	})
}

// TestIndexersOfTwoSchemasRunSideBySide: on PostgreSQL the indexer's lock
// belongs to the mirror's schema, so a mirror in another schema of the
// same database indexes while the first one's indexer holds its lock (a
// database-wide key kept every other schema's indexer, tests' and
// deployments' alike, waiting on the longest batch).
func TestIndexersOfTwoSchemasRunSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	held := openDB(t, postgresURL(t))
	other := openDB(t, postgresURL(t))
	tx, err := held.write.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := lockIndexer(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ApplyOrders(ctx, []ordersync.ApplyParams{fetched(orderDoc(t, "other", 1, ordersync.StatusPaid), 1)}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := other.IndexNow(waitCtx); err != nil {
		t.Fatalf("index a mirror while another schema's indexer holds its lock: %v", err)
	}
}

// TestIndexerAnalyzesABacklog: on PostgreSQL, a backlog of more than a
// batch on a read side analyzed while empty has the read side analyzed
// after its first batch, so that the later batches read it by index.
func TestIndexerAnalyzesABacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t, postgresURL(t))
	const n = 2 * indexerBatch
	insert := rowsSQL{prefix: "INSERT INTO orders (" + strings.Join(pagesBenchColumns, ", ") + ") OVERRIDING SYSTEM VALUE VALUES ", cols: len(pagesBenchColumns)}
	rng := rand.New(rand.NewPCG(35, 1))
	var orders [][]any
	for i := 1; i <= n; i++ {
		orders = append(orders, makePagesOrder(rng, i, n, time.Now().AddDate(-1, 0, 0)))
	}
	if _, err := db.write.ExecContext(ctx, `ANALYZE report_order_figures`); err != nil { // empty
		t.Fatal(err)
	}
	if err := db.inTx(ctx, "load orders", func(tx *sqlx.Tx) error { return db.execRows(ctx, tx, insert, orders) }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.ExecContext(ctx, `INSERT INTO mirror_changes (order_row, at) SELECT id, now() FROM orders ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if got := indexNowCount(t, db); got != n {
		t.Fatalf("indexed %d changes, want %d", got, n)
	}
	var tuples float64
	if err := db.read.GetContext(ctx, &tuples, `SELECT reltuples FROM pg_class WHERE oid = 'report_order_figures'::regclass`); err != nil {
		t.Fatal(err)
	}
	if tuples < indexerBatch {
		t.Errorf("report_order_figures analyzed with %v rows; want the first batch's figures, at least %d", tuples, indexerBatch)
	}

	// A second backlog (a burst of live following) is not analyzed again:
	// the statistics stay those of the first batch's figures, fewer than
	// the whole mirror's.
	if _, err := db.write.ExecContext(ctx, `INSERT INTO mirror_changes (order_row, at) SELECT id, now() FROM orders ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if got := indexNowCount(t, db); got != n {
		t.Fatalf("indexed %d changes again, want %d", got, n)
	}
	var again float64
	if err := db.read.GetContext(ctx, &again, `SELECT reltuples FROM pg_class WHERE oid = 'report_order_figures'::regclass`); err != nil {
		t.Fatal(err)
	}
	if again != tuples {
		t.Errorf("report_order_figures analyzed again in a second backlog: %v rows, first %v", again, tuples)
	}
}

func indexNowCount(t *testing.T, db *DB) int {
	t.Helper()
	n, err := db.IndexNow(context.Background())
	if err != nil {
		t.Fatalf("IndexNow: %v", err)
	}
	return n
}
