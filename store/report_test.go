package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestDailyTotals puts orders on both sides of New York's 23-hour day
// (2026-03-08) and checks every figure, exactly, on both dialects.
func TestDailyTotals(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		at := func(s string) time.Time {
			v, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		seq := int64(0)
		// put applies the order in each status at each fetch time, with a
		// webhook when one is given.
		put := func(code string, created, total, currency string, steps ...any) {
			t.Helper()
			id := int(seq) + 1000
			for i := 0; i < len(steps); i += 2 {
				seq++
				st := steps[i].(ordersync.Status)
				p := fetched(orderDoc(t, code, id, st, func(doc map[string]any) {
					doc["created"] = created
					doc["total"] = json.Number(total)
					if currency != "" {
						doc["store"].(map[string]any)["currencyCode"] = currency
					}
				}), seq)
				switch when := steps[i+1].(type) {
				case string:
					p.FetchedAt = at(when)
				case ordersync.EventRecord:
					p.FetchedAt = when.ReceivedAt.Add(30 * time.Minute)
					p.Events = []ordersync.EventRecord{when}
				}
				apply(t, db, p)
			}
		}
		const day = "2026-03-08T15:00:00.000Z"
		for _, code := range []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"} {
			put(code, day, "0.10", "", ordersync.StatusPending, "2026-03-08T15:01:00Z", ordersync.StatusPaid, "2026-03-08T16:00:00Z")
		}
		put("rev", day, "5.00", "",
			ordersync.StatusPending, "2026-03-08T15:01:00Z",
			ordersync.StatusPaid, webhook("rev", ordersync.EventSuccessPayment, at("2026-03-08T16:30:00Z")),
			ordersync.StatusCancelled, "2026-03-09T15:00:00Z")
		put("cx", day, "2.00", "", ordersync.StatusPending, "2026-03-08T15:01:00Z", ordersync.StatusCancelled, "2026-03-08T20:00:00Z")
		// 23:30 in New York on the 8th.
		put("late", "2026-03-09T03:30:00.000Z", "0.10", "", ordersync.StatusPending, "2026-03-09T03:31:00Z")
		put("fin", "2026-03-07T12:00:00.000Z", "3.00", "", ordersync.StatusFinalized, "2026-03-09T14:00:00Z")
		put("kw", day, "1.250", "KWD", ordersync.StatusPaid, "2026-03-08T15:30:00Z")
		// Outside the range: created and paid on the 10th in New York.
		put("after", "2026-03-10T04:00:00.000Z", "9.00", "", ordersync.StatusPaid, "2026-03-10T05:00:00Z")

		from, _ := ordersync.ParseDate("2026-03-07")
		to, _ := ordersync.ParseDate("2026-03-10")
		got, err := db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to, Location: ny})
		if err != nil {
			t.Fatalf("DailyTotals: %v", err)
		}
		zero := func(s string) ordersync.Tally { return ordersync.Tally{Total: s} }
		usd := func(date string, d ordersync.DayTotals) ordersync.DayTotals {
			d.Date, d.Currency = date, "USD"
			for _, t := range []*ordersync.Tally{&d.Created, &d.Paid, &d.Cancelled, &d.Finalized, &d.Reversed, &d.Collected} {
				if t.Total == "" {
					*t = zero("0.00")
				}
			}
			return d
		}
		want := ordersync.DailyTotals{TZ: "America/New_York", Days: []ordersync.DayTotals{
			usd("2026-03-07", ordersync.DayTotals{Created: ordersync.Tally{Count: 1, Total: "3.00"}, Net: "0.00"}),
			{Date: "2026-03-08", Currency: "KWD", Created: ordersync.Tally{Count: 1, Total: "1.250"}, Paid: ordersync.Tally{Count: 1, Total: "1.250"},
				Cancelled: zero("0.000"), Finalized: zero("0.000"), Reversed: zero("0.000"), Net: "1.250",
				Collected: ordersync.Tally{Count: 1, Total: "1.250"}},
			usd("2026-03-08", ordersync.DayTotals{
				Created:   ordersync.Tally{Count: 13, Total: "8.10"},
				Paid:      ordersync.Tally{Count: 11, Total: "6.00"},
				Cancelled: ordersync.Tally{Count: 1, Total: "2.00"},
				Net:       "6.00",
				// rev, paid on the 8th, was reversed since: not collected.
				Collected: ordersync.Tally{Count: 10, Total: "1.00"},
			}),
			usd("2026-03-09", ordersync.DayTotals{
				Paid:      ordersync.Tally{Count: 1, Total: "3.00"},
				Finalized: ordersync.Tally{Count: 1, Total: "3.00"},
				Reversed:  ordersync.Tally{Count: 1, Total: "5.00"},
				Net:       "-2.00",
				Collected: ordersync.Tally{Count: 1, Total: "3.00"},
			}),
		}}
		if got.TZ != want.TZ || len(got.Days) != len(want.Days) {
			t.Fatalf("DailyTotals =\n%+v\nwant\n%+v", got, want)
		}
		for i := range want.Days {
			if got.Days[i] != want.Days[i] {
				t.Errorf("day %d =\n%+v\nwant\n%+v", i, got.Days[i], want.Days[i])
			}
		}

		// Without a zone: the store's (the fixture's America/El_Salvador,
		// UTC-6 all year), so "late" (03:30Z on the 9th) falls on the 8th
		// and "after" (04:00Z on the 10th) on the 9th.
		got, err = db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to})
		if err != nil {
			t.Fatalf("DailyTotals without a zone: %v", err)
		}
		if got.TZ != "America/El_Salvador" {
			t.Errorf("default zone = %q, want the store's America/El_Salvador", got.TZ)
		}
		var created9 int
		for _, d := range got.Days {
			if d.Date == "2026-03-09" && d.Currency == "USD" {
				created9 = d.Created.Count
			}
		}
		if created9 != 1 {
			t.Errorf("in El Salvador, %d orders created on the 9th, want 1 (after)", created9)
		}

		// Another account has no orders and so no days, in UTC.
		got, err = db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: "other", From: from, To: to})
		if err != nil || got.TZ != "UTC" || len(got.Days) != 0 {
			t.Errorf("other account: %+v, %v; want no days in UTC", got, err)
		}
		// A range the other way round is refused, naming to.
		_, err = db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: to, To: from})
		var ve *ordersync.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields["to"]) == 0 {
			t.Errorf("to before from: err = %v, want a ValidationError on to", err)
		}
	})
}
