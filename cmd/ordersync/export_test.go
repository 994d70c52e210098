package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// seedMirror makes a SQLite mirror of n orders, the even ones paid, and
// returns its --database-url flag.
func seedMirror(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.db")
	testdb.SQLiteFile(t, path)
	db, err := store.Open(context.Background(), store.Config{URL: path, IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var params []ordersync.ApplyParams
	for i := range n {
		status, payment := "PENDING", "null"
		if i%2 == 0 {
			status, payment = "PAID", `{"authorizationCode":"204981","buyer":{"name":"Ana","phone":"+50370000000"}}`
		}
		o, err := ordersync.DecodeOrder(fmt.Appendf(nil, `{"orderId":%d,"orderCode":"c%02d","orderStatus":%q,"subtotal":1.5,"total":1.5,
"lineItems":[{"productId":1,"name":"Combo","price":1.5,"quantity":1,"subTotal":1.5}],
"store":{"currencyCode":"KWD","timezone":"Europe/Madrid"},"payment":%s,"created":"2026-03-29T0%d:30:00.000Z"}`, i+1, i, status, payment, i))
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: o, Seq: int64(i + 1),
			FetchedAt: time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC), Cause: ordersync.CauseWebhook})
	}
	if _, err := db.ApplyOrders(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	return "--database-url=" + path
}

func TestOrdersExportCommand(t *testing.T) {
	t.Parallel()
	db := seedMirror(t, 4)
	dir := t.TempDir()
	file := filepath.Join(dir, "orders.csv")
	out, err := runCLI(t, "orders", "export", db, "--output", file)
	if err != nil || !strings.Contains(out, "4 rows to "+file+" (times in Europe/Madrid)") || strings.Contains(out, "\r") {
		t.Fatalf("orders export: %v\n%q", err, out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], export.Columns(export.Orders)) || len(recs) != 5 {
		t.Fatalf("header %v, %d rows", recs[0], len(recs)-1)
	}
	col := func(r int, name string) string { return recs[r][slices.Index(recs[0], name)] }
	// Newest first; Madrid moved to summer time at 01:00 UTC that day; KWD has three decimals.
	if col(1, "order_code") != "c03" || col(1, "created_at") != "2026-03-29T05:30:00+02:00" || col(4, "created_at") != "2026-03-29T01:30:00+01:00" ||
		col(1, "total") != "1.500" || col(4, "paid_at_utc") != "2026-03-29T12:00:00Z" || col(1, "paid_at") != "" {
		t.Errorf("rows: %v", recs[1:])
	}

	// Line items as JSON Lines, paid orders only, in UTC, to standard output.
	out, err = runCLI(t, "orders", "export", db, "--kind", "order-lines", "--format", "jsonl", "--status", "paid", "--tz", "UTC", "--output", "-")
	if err != nil || strings.Count(out, `"order_code":`) != 2 || !strings.Contains(out, `"line_subtotal":"1.500"`) || !strings.Contains(out, "2 rows to standard output (times in UTC)") {
		t.Errorf("order-lines to stdout: %v\n%s", err, out)
	}

	// Bad settings name the flag and leave no file.
	for _, args := range [][]string{{"--kind", "invoices"}, {"--tz", "Mars/Olympus"}, {"--format", "jsonl", "--profile", "excel"}} {
		bad := filepath.Join(dir, "bad.csv")
		out, err := runCLI(t, append([]string{"orders", "export", db, "--output", bad}, args...)...)
		name := strings.TrimPrefix(args[len(args)-2], "--")
		if err == nil || !strings.Contains(err.Error(), name+":") {
			t.Errorf("%v: %v %s, want an error naming %s", args, err, out, name)
		}
		if _, serr := os.Stat(bad); serr == nil {
			t.Errorf("%v left a file", args)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the output directory holds %d files, want only orders.csv (no partial files)", len(entries))
	}

	// The same filter flags as orders list select the same orders, in the
	// same order; a bad one is named by its flag.
	filters := []string{"--search", "ana", "--status", "paid", "--currency", "kwd", "--min-total", "1.5", "--paid-from", "2026-03-29", "--sort", "created_asc"}
	list, err := runCLI(t, append([]string{"orders", "list", db, "--json", "--limit", "1"}, filters...)...)
	if err != nil {
		t.Fatalf("orders list: %v\n%s", err, list)
	}
	out, err = runCLI(t, append([]string{"orders", "export", db, "--format", "jsonl", "--output", "-"}, filters...)...)
	if err != nil || strings.Count(out, `"order_code":`) != 2 || strings.Index(out, `"order_code":"c00"`) > strings.Index(out, `"order_code":"c02"`) ||
		!strings.Contains(list, `"orderCode": "c00"`) {
		t.Errorf("export with the listing's filters: %v\n%s\nlist:\n%s", err, out, list)
	}
	for flag, value := range map[string]string{"--min-total": "ten", "--paid-from": "yesterday", "--sort": "newest", "--status": "SHIPPED"} {
		if _, err := runCLI(t, "orders", "export", db, "--output", "-", flag, value); err == nil || !strings.Contains(err.Error(), flag+":") {
			t.Errorf("%s %s: %v, want an error naming %s", flag, value, err, flag)
		}
	}
	if _, err := runCLI(t, "orders", "export", db, "--output", "-", "--cursor", "x"); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("--cursor: %v, want unknown (an export is the whole view)", err)
	}

	// Each export ran is in the audit trail as the operating-system user.
	mirror, err := store.Open(context.Background(), store.Config{URL: strings.TrimPrefix(db, "--database-url=")})
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	// Two orders exports ran; the refused ones read nothing and are not.
	trail, err := mirror.ListAudit(context.Background(), ordersync.AuditFilter{Action: "export.orders"})
	if err != nil || len(trail.Records) != 2 {
		t.Fatalf("the trail's orders exports: %v %+v", err, trail.Records)
	}
	if rec := trail.Records[0]; rec.Actor != osUser() || rec.Via != ordersync.ViaCLI || rec.Outcome != ordersync.OutcomeOK ||
		rec.Object != "account=default&currency=KWD&minTotal=1.5&paidFrom=2026-03-29T00%3A00%3A00Z&q=ana&sort=created_asc&status=PAID" {
		t.Errorf("the CLI export's audit record: %+v (want by %s)", rec, osUser())
	}
	if trail, _ := mirror.ListAudit(context.Background(), ordersync.AuditFilter{Action: "export.order-lines"}); len(trail.Records) != 1 || trail.Records[0].Object != "account=default&status=PAID" {
		t.Errorf("the order-lines export's audit record: %+v", trail.Records)
	}
}
