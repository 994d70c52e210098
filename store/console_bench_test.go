package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestConsoleQueryTimes times the console's own reads on the mirror of
// TestOrderQueryTimes (ORDERSYNC_BENCH_QUERY_ORDERS orders over a year,
// ORDERSYNC_BENCH_QUERY_KEEP to keep its SQLite file) with 30,000
// webhooks in the event log's last 5 minutes: the Daily totals page's
// default range (the year's last 30 days) and the Overview.
func TestConsoleQueryTimes(t *testing.T) {
	n := benchOrders(t, queryBenchEnv, "time the console's queries")
	t.Run(DialectSQLite, func(t *testing.T) { consoleQueryTimes(t, benchQueryURL(t, DialectSQLite), n) })
	t.Run(DialectPostgres, func(t *testing.T) { consoleQueryTimes(t, benchQueryURL(t, DialectPostgres), n) })
}

func consoleQueryTimes(t *testing.T, url string, n int) {
	ctx := context.Background()
	db := openBenchQueryMirror(t, url, n)
	// The loader writes no minor-unit totals (it also loads mirrors older
	// than migration 11); the store's own backfill fills them, once.
	var unfilled int
	if err := db.read.GetContext(ctx, &unfilled, `SELECT COUNT(*) FROM orders WHERE total IS NOT NULL AND total_minor IS NULL`); err != nil {
		t.Fatal(err)
	}
	if unfilled > 0 {
		start := time.Now()
		if _, err := db.write.ExecContext(ctx, `INSERT INTO minor_backfill (pending) VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		if err := db.backfillMinorUnits(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the minor-unit totals of %d orders filled in %s", db.dialect, unfilled, time.Since(start).Round(time.Second))
	}
	end := benchQueryStart.AddDate(1, 0, 0)
	const webhooks = 30000
	var events []ordersync.EventRecord
	for i := range webhooks {
		events = append(events, ordersync.EventRecord{MsgID: fmt.Sprint("bench-ev-", i), Account: ordersync.DefaultAccount,
			ReceivedAt: end.Add(-time.Duration(i) * 10 * time.Millisecond), Type: ordersync.EventUpdated,
			OrderCode: upstreamCode(n - i%n), Outcome: ordersync.OutcomeSynced})
		if len(events) == 500 {
			if err := db.RecordEvents(ctx, events); err != nil {
				t.Fatal(err)
			}
			events = events[:0]
		}
	}
	const runs = 20
	report := func(name string, run func() error) {
		var times []time.Duration
		for i := range runs + 1 {
			start := time.Now()
			if err := run(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if i > 0 {
				times = append(times, time.Since(start))
			}
		}
		slices.Sort(times)
		t.Logf("| %s | %s | %.1f | %.1f |", db.dialect, name, ms(times[len(times)/2]), ms(times[(len(times)*95+99)/100-1]))
	}
	to := time.Date(end.Year(), end.Month(), end.Day(), 0, 0, 0, 0, time.UTC)
	report("daily totals, the last 30 days", func() error {
		_, err := db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: to.AddDate(0, 0, -30), To: to})
		return err
	})
	report("overview", func() error {
		o, err := db.Overview(ctx, ordersync.OverviewParams{Account: ordersync.DefaultAccount, Now: end})
		if err == nil && o.Webhooks != webhooks {
			err = fmt.Errorf("%d webhooks, want %d", o.Webhooks, webhooks)
		}
		return err
	})
}
