package export_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

// TestExportThroughput measures an export's rows a second and how much the
// process's resident memory grows while it runs, on a mirror of
// ORDERSYNC_BENCH_EXPORT_ORDERS paid orders of three line items each, on
// SQLite and (with ORDERSYNC_TEST_POSTGRES_URL) PostgreSQL. It is a
// measurement, not a test: docs/benchmarks.md has its figures.
//
// ORDERSYNC_BENCH_EXPORT_KEEP names a SQLite file and
// ORDERSYNC_BENCH_EXPORT_KEEP_PG_SCHEMA a PostgreSQL schema that keep the
// mirror (created when missing, never removed) and are reused, filled up
// to the number of orders when short, so that builds can be compared on one
// mirror without filling it again; with only one of them set, only that
// dialect runs. ORDERSYNC_BENCH_EXPORT_KINDS (comma-separated kinds, in
// order, repeats allowed) says which exports to run, none when it is set
// but empty (to fill a kept mirror); the default is orders, order-lines,
// orders, order-lines.
func TestExportThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ORDERSYNC_BENCH_EXPORT_ORDERS"))
	if n <= 0 {
		t.Skip("set ORDERSYNC_BENCH_EXPORT_ORDERS (e.g. 100000) to measure exports")
	}
	// Each kind twice by default: the first export after the fill reads
	// pages no export has read yet.
	kinds := []export.Kind{export.Orders, export.OrderLines, export.Orders, export.OrderLines}
	if v, ok := os.LookupEnv("ORDERSYNC_BENCH_EXPORT_KINDS"); ok {
		kinds = nil
		for _, k := range strings.Fields(strings.ReplaceAll(v, ",", " ")) {
			kinds = append(kinds, export.Kind(k))
		}
	}
	keep, keepSchema := os.Getenv("ORDERSYNC_BENCH_EXPORT_KEEP"), os.Getenv("ORDERSYNC_BENCH_EXPORT_KEEP_PG_SCHEMA")
	urls := map[string]string{}
	if keep != "" || keepSchema == "" {
		urls["sqlite"] = filepath.Join(t.TempDir(), "m.db")
		if keep != "" {
			urls["sqlite"] = keep
		}
	}
	if pg := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"); pg != "" && (keepSchema != "" || keep == "") {
		if keepSchema != "" {
			urls["postgres"] = testenv.KeptSchema(t, pg, keepSchema)
		} else {
			run, err := testenv.New(context.Background(), "", pg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { run.Close() })
			urls["postgres"] = run.DatabaseURL
		}
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		url, ok := urls[dialect]
		if !ok {
			continue
		}
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, store.Config{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			counts, err := db.CountOrdersByStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			have := counts[ordersync.StatusPaid]
			if total := sumCounts(counts); have < n && total >= n {
				// A mirror that store's TestOrderQueryTimes filled (orders
				// of every status, two line items each) is exported as it
				// is, so that one mirror serves both benchmarks.
				t.Logf("exporting the kept mirror's %d orders as they are (%d paid)", total, have)
				have = n
			}
			if have < n {
				fillStart := time.Now()
				applied := n
				if dialect == "postgres" {
					// Applying a million orders takes most of an hour on
					// PostgreSQL here: the first copyBase are applied and
					// the rest copied from them in SQL.
					applied = min(n, max(have, copyBase))
				}
				if have < applied {
					fill(t, db, have, applied)
				}
				if applied < n {
					copyOrders(t, url, max(have, applied), n)
				}
				t.Logf("filled orders %d to %d in %s", have, n, time.Since(fillStart).Round(time.Millisecond))
			}
			defer measureLock(t)()
			for _, kind := range kinds {
				runtime.GC()
				debug.FreeOSMemory()
				base := procStatus(t, "VmRSS")
				// Writing 5 to clear_refs resets the peak (VmHWM) to now.
				if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
					t.Fatal(err)
				}
				f, err := os.Create(filepath.Join(t.TempDir(), string(kind)+".csv"))
				if err != nil {
					t.Fatal(err)
				}
				cpu0, err := rusage.CPU()
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				rows, err := export.Run(ctx, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount},
					export.Options{Kind: kind, Location: time.UTC}, 0, f, nil)
				elapsed := time.Since(start)
				cpu1, cerr := rusage.CPU()
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if cerr != nil {
					t.Fatal(cerr)
				}
				peak := procStatus(t, "VmHWM")
				t.Logf("%s %s: %d rows in %s: %.0f rows/s, %.2f µs of this process's CPU a row; RSS %d MiB before, peak %d MiB (+%d MiB); load %s",
					dialect, kind, rows, elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds(),
					float64((cpu1-cpu0).Microseconds())/float64(max(rows, 1)), base>>10, peak>>10, (peak-base)>>10, loadAverage())
			}
		})
	}
}

// fill applies paid orders from to n (exclusive) in batches, as the
// pipeline would.
func fill(t *testing.T, db *store.DB, from, n int) {
	t.Helper()
	const batch = 500
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := from; i < n; i += batch {
		var params []ordersync.ApplyParams
		for j := i; j < min(i+batch, n); j++ {
			doc := fmt.Sprintf(`{"orderId":%d,"orderCode":"b%07d","orderReference":"ref-%d","name":"Pedido","orderStatus":"PAID",
"lineItems":[{"productId":1,"sku":"COMBO","name":"Combo Clásico","price":6.50,"quantity":2,"subTotal":13.00},
{"productId":2,"sku":"SODA","name":"Refresco 600 ml","price":1.25,"promoPrice":0.99,"quantity":1,"subTotal":0.99},
{"productId":3,"sku":"POSTRE","name":"Flan","price":2.00,"quantity":1,"subTotal":2.00}],
"subtotal":15.99,"totalDetails":{"shippingAmount":2.00,"discountAmount":0,"surchargeAmount":0},"total":17.99,
"store":{"name":"Tienda","currencyCode":"USD","timezone":"America/El_Salvador"},
"payment":{"authorizationCode":"204981","buyer":{"name":"José Peña","phone":"+50370001234","email":"jose@example.com"}},
"created":%q}`, j+1, j, j, created.Add(time.Duration(j)*time.Second).Format(time.RFC3339))
			o, err := ordersync.DecodeOrder([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: o, Seq: int64(j + 1),
				FetchedAt: created.Add(time.Duration(j) * time.Second), Cause: ordersync.CauseWebhook})
		}
		if _, err := db.ApplyOrders(context.Background(), params); err != nil {
			t.Fatal(err)
		}
	}
}

// sumCounts is the number of orders of every status.
func sumCounts(counts map[ordersync.Status]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// loadAverage is the 1-minute load average, as /proc/loadavg gives it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// copyBase is how many orders the benchmark applies on PostgreSQL before
// it copies them.
const copyBase = 50000

// copyOrders fills a PostgreSQL mirror that holds fill's orders 0 to
// have-1 up to n orders: order i of the copies is a copy of a filled one
// with fill's code, id, reference and times for i, and its line items,
// inserted in the order of i (so their row ids grow with i, as applying
// them would make them). The copies have no name words and no status
// history: the orders' and lines' exports read neither.
func copyOrders(t *testing.T, url string, have, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var count, last int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MAX(order_id::bigint), 0) FROM orders`).Scan(&count, &last); err != nil {
		t.Fatal(err)
	}
	if count != have || last != have {
		t.Fatalf("copy orders: %d orders with ids up to %d, want %d and %d", count, last, have, have)
	}
	rows, err := conn.Query(ctx, `SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'orders' AND column_name <> 'id' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// $1 is what the copy adds to an order's number: fill's order i has
	// the code b%07d of i, the id i+1, the reference ref-i, and times i
	// seconds on.
	shifted := map[string]string{
		"order_code":      "'b' || lpad((order_id::bigint - 1 + $1::bigint)::text, 7, '0')",
		"order_id":        "(order_id::bigint + $1::bigint)::text",
		"order_reference": "'ref-' || (order_id::bigint - 1 + $1::bigint)::text",
	}
	exprs := make([]string, len(cols))
	for i, c := range cols {
		switch e, ok := shifted[c]; {
		case ok:
			exprs[i] = e
		case strings.HasSuffix(c, "_at") && c != "expires_at":
			exprs[i] = c + " + make_interval(secs => $1::bigint)"
		default:
			exprs[i] = c
		}
	}
	copyChunk := `WITH copied AS (INSERT INTO orders (` + strings.Join(cols, ", ") + `) SELECT ` + strings.Join(exprs, ", ") + `
  FROM orders WHERE order_id::bigint <= $2 ORDER BY order_id::bigint RETURNING id, account, order_id)
INSERT INTO order_line_items (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT c.id, li.position, li.product_id, li.sku, li.name, li.price, li.promo_price, li.quantity, li.image_url, li.sub_total
FROM copied c JOIN orders o ON o.account = c.account AND o.order_id = (c.order_id::bigint - $1::bigint)::text
JOIN order_line_items li ON li.order_row = o.id`
	for from := have; from < n; from += have {
		if _, err := conn.Exec(ctx, copyChunk, from, min(have, n-from)); err != nil {
			t.Fatalf("copy orders: %v", err)
		}
	}
	for _, table := range []string{"orders", "order_line_items"} {
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
			t.Fatal(err)
		}
	}
}

// procStatus reads a "kB" line of /proc/self/status, in KiB.
func procStatus(t *testing.T, key string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/self/status", key)
	return 0
}
