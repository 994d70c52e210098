package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

// TestConsolePageTimes times each console page's HTML, through the admin
// handler over loopback HTTP with a signed-in session, on the mirror that
// store's TestConsoleQueryTimes keeps (ORDERSYNC_BENCH_QUERY_ORDERS
// orders; ORDERSYNC_BENCH_QUERY_KEEP names the SQLite file,
// ORDERSYNC_BENCH_QUERY_KEEP_PG_SCHEMA the PostgreSQL schema): the
// console's clock is the mirror's last instant, so the Daily totals page's
// default range holds the year's last 30 days. It logs p50, p95 and the
// page's weight. It measures: it is skipped unless those are set.
func TestConsolePageTimes(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("ORDERSYNC_BENCH_QUERY_ORDERS"))
	if n <= 0 {
		t.Skip("set ORDERSYNC_BENCH_QUERY_ORDERS and a kept mirror (store's TestConsoleQueryTimes) to time the console's pages")
	}
	t.Run("sqlite", func(t *testing.T) {
		keep := os.Getenv("ORDERSYNC_BENCH_QUERY_KEEP")
		if keep == "" {
			t.Skip("set ORDERSYNC_BENCH_QUERY_KEEP to the mirror store's TestConsoleQueryTimes keeps")
		}
		consolePageTimes(t, "sqlite:"+keep, n)
	})
	t.Run("postgres", func(t *testing.T) {
		base, schema := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"), os.Getenv("ORDERSYNC_BENCH_QUERY_KEEP_PG_SCHEMA")
		if base == "" || schema == "" {
			t.Skip("set ORDERSYNC_TEST_POSTGRES_URL and ORDERSYNC_BENCH_QUERY_KEEP_PG_SCHEMA to the schema store's TestConsoleQueryTimes keeps")
		}
		u, err := testenv.SchemaURL(base, schema)
		if err != nil {
			t.Fatal(err)
		}
		consolePageTimes(t, u, n)
	})
}

func consolePageTimes(t *testing.T, dbURL string, n int) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: dbURL, IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first, err := db.ListOrders(ctx, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Orders) == 0 {
		t.Fatalf("the kept mirror is empty: run store's TestConsoleQueryTimes with %d orders first", n)
	}
	// The mirror's orders span the year before its end (store's
	// benchQueryStart, 2025-11-01, plus a year).
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.DeadLetters, c.Endpoints, c.DeliveryDeadLetters = db, db, db
		c.Reports, c.Overview, c.Exports = db, db, db
		c.Clock = func() time.Time { return end }
	})
	b := newBrowser(t, base)
	if resp := b.signIn("ops-token"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	const runs = 20
	dialect := strings.SplitN(dbURL, ":", 2)[0]
	for _, p := range []struct{ name, path string }{
		{"Overview", "/console/"},
		{"Orders, no filter", "/console/orders"},
		{"Orders, a buyer's name (jose)", "/console/orders?q=jose"},
		{"Orders, an order's code", "/console/orders?q=" + url.QueryEscape(first.Orders[0].Order.OrderCode)},
		{"Order", "/console/orders/" + url.PathEscape(first.Orders[0].Order.OrderCode)},
		{"Dead letters", "/console/dead-letters"},
		{"Endpoints", "/console/endpoints"},
		{"Daily totals, the default 30 days", "/console/totals"},
		{"Audit", "/console/audit"},
	} {
		var times []time.Duration
		size := 0
		for i := range runs + 1 {
			start := time.Now()
			resp, page := b.do("GET", p.path, nil)
			took := time.Since(start)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d\n%s", p.name, resp.StatusCode, page)
			}
			if i > 0 { // the first warms the caches
				times = append(times, took)
			}
			size = len(page)
		}
		slices.Sort(times)
		p50, p95 := times[len(times)/2], times[(len(times)*95+99)/100-1]
		t.Logf("| %s | %s | %.1f | %.1f | %.1f |", dialect, p.name, float64(p50)/1e6, float64(p95)/1e6, float64(size)/1024)
	}
}
