package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// TestReportDaily runs `report daily` on a mirror with three paid orders of
// 0.10, in each output, and with bad flags.
func TestReportDaily(t *testing.T) {
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
	var params []ordersync.ApplyParams
	for i, code := range []string{"a1", "a2", "a3"} {
		var doc map[string]any
		if err := json.Unmarshal(fixture, &doc); err != nil {
			t.Fatal(err)
		}
		doc["orderCode"], doc["orderId"], doc["orderStatus"], doc["total"] = code, i+1, "PAID", json.Number("0.10")
		doc["created"] = "2026-03-08T15:00:00.000Z"
		raw, _ := json.Marshal(doc)
		o, err := ordersync.DecodeOrder(raw)
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: o, Seq: int64(i + 1),
			FetchedAt: time.Date(2026, 3, 8, 16, 0, 0, 0, time.UTC), Cause: ordersync.CauseTrack})
	}
	if _, err := db.ApplyOrders(ctx, params); err != nil {
		t.Fatal(err)
	}
	db.Close()

	base := []string{"report", "daily", "--database-url=" + url, "--from=2026-03-08", "--to=2026-03-09", "--tz=Europe/Madrid"}
	out, err := runCLI(t, append(base, "--csv")...)
	if err != nil {
		t.Fatalf("report daily --csv: %v\n%s", err, out)
	}
	want := "date,tz,currency,created_count,created_total,paid_count,paid_total,cancelled_count,cancelled_total,finalized_count,finalized_total,reversed_count,reversed_total,net,account\n" +
		"2026-03-08,Europe/Madrid,USD,3,0.30,3,0.30,0,0.00,0,0.00,0,0.00,0.30,\n"
	if out != want {
		t.Errorf("report daily --csv =\n%s\nwant\n%s", out, want)
	}
	if out, err = runCLI(t, append(base, "--json")...); err != nil || !strings.Contains(out, `"net": "0.30"`) || !strings.Contains(out, `"tz": "Europe/Madrid"`) {
		t.Errorf("report daily --json: %v\n%s", err, out)
	}
	if out, err = runCLI(t, base...); err != nil || !strings.Contains(out, "3 / 0.30") || !strings.Contains(out, "Days in Europe/Madrid (UTC+01:00);") {
		t.Errorf("report daily: %v\n%s", err, out)
	}
	// Every store side by side (the default store only here), in --tz;
	// an unknown store is named with the known ones.
	if out, err = runCLI(t, append(base, "--account=*", "--csv")...); err != nil || !strings.HasSuffix(out, ",0.30,default\n") {
		t.Errorf("report daily --account='*' --csv: %v\n%s", err, out)
	}
	if out, err = runCLI(t, append(base, "--account=madrid")...); err == nil || !strings.Contains(err.Error(), `--account: unknown store "madrid" (known stores: default; * for all stores)`) {
		t.Errorf("report daily --account=madrid: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "orders", "list", "--database-url="+url, "--account=madrid"); err == nil || !strings.Contains(err.Error(), "known stores: default") {
		t.Errorf("orders list --account=madrid: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "orders", "list", "--database-url="+url, "--account=*"); err != nil || strings.Count(out, "PAID") != 3 {
		t.Errorf("orders list --account='*': %v\n%s", err, out)
	}
	// The store's zone by default (the fixture's America/El_Salvador).
	if out, err = runCLI(t, "report", "daily", "--database-url="+url, "--from=2026-03-08", "--to=2026-03-09", "--json"); err != nil || !strings.Contains(out, `"tz": "America/El_Salvador"`) {
		t.Errorf("report daily without --tz: %v\n%s", err, out)
	}
	for flag, args := range map[string][]string{
		"--tz":   {"--from=2026-03-08", "--to=2026-03-09", "--tz=Nowhere/Land"},
		"--tz ":  {"--from=2026-03-08", "--to=2026-03-09", "--tz=CST"},
		"--to":   {"--from=2026-03-08", "--to=2026-03-07"},
		"--from": {"--from=8/3/2026", "--to=2026-03-09"},
	} {
		_, err := runCLI(t, append([]string{"report", "daily", "--database-url=" + url}, args...)...)
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(flag)) {
			t.Errorf("report daily %v: err = %v, want one naming %s", args, err, flag)
		}
	}
}
