package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// migrationBenchEnv, set to a number of orders (1000000 for the figure in
// docs/benchmarks.md), runs TestMigrationPaidAtTime.
const migrationBenchEnv = "ORDERSYNC_BENCH_MIGRATION_ORDERS"

// TestMigrationPaidAtTime times migration 8 (paid_at, status_changed_at
// and their indexes) on a mirror made by version 7: orders with documents
// the size of the service's and a status history of one to three rows each
// (pending; then paid for six in ten; then finalized or cancelled for half
// of those). It measures: it is skipped unless migrationBenchEnv is set.
func TestMigrationPaidAtTime(t *testing.T) {
	n := benchOrders(t, migrationBenchEnv, "time migration 8")
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDBAt(t, url, 7)

		overriding := ""
		series := `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT i FROM s`
		if db.dialect == DialectPostgres {
			series = `SELECT i FROM generate_series(1, ?::int) AS i`
			overriding = " OVERRIDING SYSTEM VALUE"
		}
		doc := fmt.Sprintf(benchDoc, 0, "XCODE", "XCODE", "XCODE", "mirrored", "PENDING", 0, "XCODE")
		start := time.Now()
		fill := []string{
			`INSERT INTO orders (id, account, order_code, order_id, status, total, created_at, raw_document, document_hash, first_seen_at, paid_fired, status_transitions)` + overriding + `
SELECT s.i, 'default', 'c' || s.i, '' || s.i,
       CASE WHEN s.i % 10 >= 6 THEN 'PENDING' WHEN s.i % 5 = 0 THEN 'FINALIZED' WHEN s.i % 5 = 1 THEN 'CANCELLED' ELSE 'PAID' END,
       17.99, ?, REPLACE(CAST(? AS TEXT), 'XCODE', 'c' || s.i), 'h', ?, s.i % 10 < 6, 1 FROM (` + series + `) AS s`,
			`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause)
SELECT s.i, '', 'PENDING', s.i, ?, 'webhook' FROM (` + series + `) AS s`,
			`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause)
SELECT s.i, 'PENDING', 'PAID', s.i, ?, 'webhook' FROM (` + series + `) AS s WHERE s.i % 10 < 6`,
			`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause)
SELECT s.i, 'PAID', CASE WHEN s.i % 5 = 0 THEN 'FINALIZED' ELSE 'CANCELLED' END, s.i, ?, 'webhook' FROM (` + series + `) AS s
WHERE s.i % 10 < 6 AND s.i % 5 IN (0, 1)`,
		}
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		args := [][]any{{at, doc, at, n}, {at, n}, {at.Add(time.Minute), n}, {at.Add(time.Hour), n}}
		for i, q := range fill {
			if _, err := db.write.ExecContext(ctx, db.rebind(q), args[i]...); err != nil {
				t.Fatalf("fill a version 7 mirror: %v", err)
			}
		}
		if db.dialect == DialectPostgres {
			if _, err := db.write.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: filled %d orders at version 7 in %s", db.dialect, n, time.Since(start).Round(time.Millisecond))

		start = time.Now()
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
		t.Logf("%s: migration 8 on %d orders took %s", db.dialect, n, time.Since(start).Round(time.Millisecond))
		var paid int
		if err := db.read.GetContext(ctx, &paid, `SELECT COUNT(*) FROM orders WHERE paid_at IS NOT NULL`); err != nil {
			t.Fatal(err)
		}
		if want := (n/10)*6 + min(n%10, 6); paid != want {
			t.Errorf("%d orders have paid_at, want %d", paid, want)
		}
	})
}
