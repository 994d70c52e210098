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

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

// TestExportThroughput measures an export's rows a second and how much the
// process's resident memory grows while it runs, on a mirror of
// ORDERSYNC_BENCH_EXPORT_ORDERS paid orders of three line items each, on
// SQLite and (with ORDERSYNC_TEST_POSTGRES_URL) PostgreSQL. It is a
// measurement, not a test: docs/benchmarks.md has its figures.
func TestExportThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ORDERSYNC_BENCH_EXPORT_ORDERS"))
	if n <= 0 {
		t.Skip("set ORDERSYNC_BENCH_EXPORT_ORDERS (e.g. 100000) to measure exports")
	}
	urls := map[string]string{"sqlite": filepath.Join(t.TempDir(), "m.db")}
	if pg := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"); pg != "" {
		run, err := testenv.New(context.Background(), "", pg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Close() })
		urls["postgres"] = run.DatabaseURL
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
			fillStart := time.Now()
			fill(t, db, n)
			t.Logf("filled %d orders in %s", n, time.Since(fillStart).Round(time.Millisecond))
			defer measureLock(t)()
			// Each kind twice: the first export after the fill reads pages
			// no export has read yet.
			for _, kind := range []export.Kind{export.Orders, export.OrderLines, export.Orders, export.OrderLines} {
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
				start := time.Now()
				rows, err := export.Run(ctx, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount},
					export.Options{Kind: kind, Location: time.UTC}, 0, f, nil)
				elapsed := time.Since(start)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				peak := procStatus(t, "VmHWM")
				t.Logf("%s %s: %d rows in %s: %.0f rows/s; RSS %d MiB before, peak %d MiB (+%d MiB)", dialect, kind, rows,
					elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds(), base>>10, peak>>10, (peak-base)>>10)
			}
		})
	}
}

// fill applies n paid orders in batches, as the pipeline would.
func fill(t *testing.T, db *store.DB, n int) {
	t.Helper()
	const batch = 500
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += batch {
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
