package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// TestDailyTotalsSums checks that the database's sums per day and
// currency (report_buckets, migration 00018) give the very report that reading every
// order one by one gives, on both dialects: orders every few minutes
// across the daylight-saving changes of New York and Madrid (spring and
// autumn), in currencies of 0, 2 and 3 decimals, two this binary does not
// know (whose sums keep their totals' digits), and totals with more decimals than their currency's (which no
// integer says), in zones whose days start on a quarter or half hour of UTC.
func TestDailyTotalsSums(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		rng := rand.New(rand.NewPCG(3, 8))
		overriding := ""
		if db.dialect == DialectPostgres {
			overriding = " OVERRIDING SYSTEM VALUE"
		}
		columns := append(slices.Clone(benchQueryColumns), "minor_units", "total_minor")
		col := func(name string) int { return slices.Index(columns, name) }
		insert := rowsSQL{prefix: "INSERT INTO orders (" + strings.Join(columns, ", ") + ")" + overriding + " VALUES ", cols: len(columns)}
		currencies := []string{"USD", "EUR", "KWD", "JPY", "ZZZ", "ZZY"}
		var rows, history [][]any
		add := func(i int, created time.Time) {
			o := makeBenchQueryOrder(rng, i, 1000000)
			v := append(o.values, nil, nil)
			currency := currencies[i%len(currencies)]
			places := ordersync.MinorScale(currency)
			total := ordersync.AmountFromMinor(rng.Int64N(100000), places)
			if i%7 == 0 { // a decimal more than the currency has: no total_minor
				total = ordersync.AmountFromMinor(rng.Int64N(1000000)*10+3, places+1)
			}
			if i%11 == 0 { // written with fewer decimals than the currency's
				total = ordersync.AmountFromInt(rng.Int64N(100))
			}
			if currency == "ZZY" { // unknown, and never with three decimals: its sums keep fewer
				total = ordersync.AmountFromMinor(rng.Int64N(1000), 1)
			}
			v[col("total")], v[col("subtotal")], v[col("total_key")] = total, total, totalKey(total)
			v[col("store_currency_code")] = currency
			v[col("created_at")] = dbTime(created)
			if v[col("paid_at")] != nil {
				v[col("paid_at")] = dbTime(created.Add(time.Duration(rng.IntN(6*3600)) * time.Second))
			}
			v[col("minor_units")], v[col("total_minor")] = places, minorAmount(total, currency)
			rows = append(rows, v)
			// Cancellations (before and after the payment, some twice) and
			// finalizations (some twice), on and just off quarter hours.
			for _, c := range []struct {
				every  int
				status ordersync.Status
			}{{3, ordersync.StatusCancelled}, {5, ordersync.StatusFinalized}} {
				if i%c.every != 0 {
					continue
				}
				at := created.Add(time.Duration(rng.IntN(6*3600)) * time.Second).Truncate(15 * time.Minute)
				if rng.IntN(2) == 0 {
					at = at.Add(time.Duration(rng.IntN(900000000)) * time.Microsecond)
				}
				history = append(history, []any{int64(i), "PENDING", string(c.status), 2, dbTime(at), "fetch"})
				if i%(4*c.every) == 0 {
					history = append(history, []any{int64(i), "PAID", string(c.status), 3, dbTime(at.Add(-time.Hour)), "fetch"})
				}
			}
		}
		// An order every 1 to 46 minutes (16 under thoroughEnv): dozens a
		// day in every zone, beside the ones on the quarter hours.
		spacing := thorough(2700, 900)
		i := 1
		for _, span := range [][2]string{{"2026-03-06T00:00:00Z", "2026-03-11T00:00:00Z"}, {"2026-03-27T00:00:00Z", "2026-04-01T00:00:00Z"},
			{"2026-10-23T00:00:00Z", "2026-10-27T00:00:00Z"}, {"2026-10-30T00:00:00Z", "2026-11-03T00:00:00Z"}} {
			from, _ := time.Parse(time.RFC3339, span[0])
			to, _ := time.Parse(time.RFC3339, span[1])
			for at := from; at.Before(to); at = at.Add(time.Duration(60+rng.IntN(spacing)) * time.Second) {
				add(i, at.Add(time.Duration(rng.IntN(1000000))*time.Microsecond))
				i++
			}
			// On the quarter hours themselves, and just before them.
			for at := from; at.Before(to); at = at.Add(5 * time.Hour) {
				add(i, at)
				add(i+1, at.Add(-time.Microsecond))
				i += 2
			}
		}
		err := db.inTx(ctx, "load orders", func(tx *sqlx.Tx) error {
			for chunk := range slices.Chunk(rows, 500) {
				if err := db.execRows(ctx, tx, insert, chunk); err != nil {
					return err
				}
			}
			changes := rowsSQL{prefix: "INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause) VALUES ", cols: 6}
			for chunk := range slices.Chunk(history, 500) {
				if err := db.execRows(ctx, tx, changes, chunk); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d orders, %d status changes", len(rows), len(history))
		if _, err := db.RebuildReadSide(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ zone, from, to string }{
			{"America/New_York", "2026-03-06", "2026-03-11"},
			{"America/New_York", "2026-10-30", "2026-11-03"},
			{"Europe/Madrid", "2026-03-27", "2026-04-01"},
			{"Europe/Madrid", "2026-10-23", "2026-10-27"},
			{"Asia/Kathmandu", "2026-03-06", "2026-11-03"},
			{"Australia/Lord_Howe", "2026-03-06", "2026-11-03"},
			{"UTC", "2026-03-06", "2026-11-03"},
		} {
			loc, err := time.LoadLocation(c.zone)
			if err != nil {
				t.Fatal(err)
			}
			from, _ := ordersync.ParseDate(c.from)
			to, _ := ordersync.ParseDate(c.to)
			params := ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to, Location: loc}
			want, err := db.dailyTotals(ctx, params, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Days) == 0 {
				t.Fatalf("%s %s: no days", c.zone, c.from)
			}
			var figures [5]int
			for _, d := range want.Days {
				for k, tl := range []ordersync.Tally{d.Created, d.Paid, d.Cancelled, d.Finalized, d.Reversed} {
					figures[k] += tl.Count
				}
			}
			if slices.Contains(figures[:], 0) {
				t.Fatalf("%s from %s: a figure counts nothing (created, paid, cancelled, finalized, reversed: %v)", c.zone, c.from, figures)
			}
			summed, err := db.dailyTotals(ctx, params, true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(summed, want) {
				for j := range min(len(summed.Days), len(want.Days)) {
					if summed.Days[j] != want.Days[j] {
						t.Errorf("%s: summed %+v, one by one %+v", c.zone, summed.Days[j], want.Days[j])
					}
				}
				t.Fatalf("%s from %s: the sums (%d days) differ from the orders read one by one (%d days)", c.zone, c.from, len(summed.Days), len(want.Days))
			}
		}
	})
}

// TestDailyTotalsSumsPlan checks that SQLite reads a day's sums from
// report_buckets' primary key alone, and finds the default zone without
// reading the account's every order.
func TestDailyTotalsSumsPlan(t *testing.T) {
	db := openDB(t, sqliteURL(t))
	for query, index := range map[string]string{reportBucketsSQL: "PRIMARY KEY", reportZoneSQL: "INDEX orders_account_id"} {
		var plan []struct {
			ID     int    `db:"id"`
			Parent int    `db:"parent"`
			NotUse int    `db:"notused"`
			Detail string `db:"detail"`
		}
		args := []any{"a", int64(1), int64(2)}[:strings.Count(query, "?")]
		if err := db.read.Select(&plan, "EXPLAIN QUERY PLAN "+query, args...); err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(plan); !strings.Contains(s, "USING "+index) || strings.Contains(s, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s\nplan %+v, want it to use %s", query, plan, index)
		}
	}
}
