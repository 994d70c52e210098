package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// TestReindexCommand empties the read side of a mirror with paid,
// cancelled and open orders, runs `reindex` and gets the same daily totals
// and the same search by name as before.
func TestReindexCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mirror.db")
	testdb.SQLiteFile(t, path)
	url := "sqlite:" + path
	db, err := store.Open(ctx, store.Config{URL: url, IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile(filepath.Join("..", "..", "store", "testdata", "order-detail.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, status := range []string{"PENDING", "PAID", "PAID", "CANCELLED", "FINALIZED"} {
		var doc map[string]any
		if err := json.Unmarshal(fixture, &doc); err != nil {
			t.Fatal(err)
		}
		code := fmt.Sprintf("r%d", i)
		doc["orderCode"], doc["orderId"], doc["orderStatus"], doc["total"] = code, i+1, status, json.Number(fmt.Sprintf("%d.25", i+1))
		doc["created"] = "2026-03-08T15:00:00.000Z"
		if status != "PENDING" {
			doc["payment"] = map[string]any{"authorizationCode": "1234", "buyer": map[string]any{"name": "Ana Reyes", "email": "ana@example.com", "phone": "+50370000001"}}
		}
		raw, _ := json.Marshal(doc)
		o, err := ordersync.DecodeOrder(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: ordersync.DefaultAccount, Order: o, Seq: int64(i + 1),
			FetchedAt: time.Date(2026, 3, 8, 16, i, 0, 0, time.UTC), Cause: ordersync.CauseTrack}}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	read := func() string {
		t.Helper()
		report, err := runCLI(t, "report", "daily", "--database-url="+url, "--from=2026-03-01", "--to=2026-03-31", "--tz=UTC", "--csv")
		if err != nil {
			t.Fatalf("report daily: %v\n%s", err, report)
		}
		found, err := runCLI(t, "orders", "list", "--database-url="+url, "--search=reyes")
		if err != nil {
			t.Fatalf("orders list: %v\n%s", err, found)
		}
		return report + found
	}
	want := read()
	if !strings.Contains(want, "r1") || !strings.Contains(want, "2026-03-08") {
		t.Fatalf("the mirror's report and search are not what the test needs:\n%s", want)
	}

	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM report_buckets`, `DELETE FROM report_order_figures`, `DELETE FROM order_name_tokens`} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	if got := read(); got == want {
		t.Fatalf("with the read side emptied, the report and search are unchanged:\n%s", got)
	}

	out, err := runCLI(t, "reindex", "--database-url="+url)
	if err != nil || !strings.Contains(out, "Rebuilt the read side of 5 orders") {
		t.Fatalf("reindex: %v\n%s", err, out)
	}
	if got := read(); got != want {
		t.Errorf("after reindex\n%s\nwant\n%s", got, want)
	}
}
