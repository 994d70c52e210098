package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// figureFilters are the listing's filters that select the orders a figure
// of the daily totals counts on a day: what the console links each figure
// to.
var figureFilters = map[string]func(f *ordersync.OrderFilter, d ordersync.DaySpan){
	"created":   func(f *ordersync.OrderFilter, d ordersync.DaySpan) { f.CreatedFrom, f.CreatedTo = d.Start, d.End },
	"paid":      func(f *ordersync.OrderFilter, d ordersync.DaySpan) { f.PaidFrom, f.PaidTo = d.Start, d.End },
	"cancelled": func(f *ordersync.OrderFilter, d ordersync.DaySpan) { f.CancelledFrom, f.CancelledTo = d.Start, d.End },
	"finalized": func(f *ordersync.OrderFilter, d ordersync.DaySpan) { f.FinalizedFrom, f.FinalizedTo = d.Start, d.End },
	"reversed":  func(f *ordersync.OrderFilter, d ordersync.DaySpan) { f.ReversedFrom, f.ReversedTo = d.Start, d.End },
}

// TestDailyTotalsFiguresAreTheirOrders: for every figure of every day,
// store and currency of the daily totals, the listing filtered as the
// figure's link filters it selects exactly as many orders as the figure
// counts, whose totals sum to the figure's total.
func TestDailyTotalsFiguresAreTheirOrders(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		at := func(s string) time.Time {
			v, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		seq := int64(0)
		put := func(account, code, created, total, currency string, steps ...any) {
			t.Helper()
			id := int(seq) + 3000
			for i := 0; i < len(steps); i += 2 {
				seq++
				st := steps[i].(ordersync.Status)
				p := fetched(orderDoc(t, code, id, st, func(doc map[string]any) {
					doc["created"] = created
					doc["total"] = json.Number(total)
					doc["store"].(map[string]any)["currencyCode"] = currency
				}), seq)
				p.Account = account
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
		const (
			P, C, F, X = ordersync.StatusPaid, ordersync.StatusCancelled, ordersync.StatusFinalized, ordersync.StatusPending
		)
		for _, account := range []string{"sv", "md"} {
			a := account + "-"
			for i, cur := range []string{"USD", "EUR"} {
				c := fmt.Sprintf("%s%d-", a, i)
				day := "2026-03-08T15:00:00.000Z"
				put(account, c+"paid1", day, "10.10", cur, X, "2026-03-08T15:01:00Z", P, "2026-03-08T16:00:00Z")
				put(account, c+"paid2", day, "0.15", cur, P, webhook(c+"paid2", ordersync.EventSuccessPayment, at("2026-03-08T23:50:00Z")))
				put(account, c+"rev", day, "5.00", cur, X, "2026-03-08T15:01:00Z",
					P, webhook(c+"rev", ordersync.EventSuccessPayment, at("2026-03-08T16:30:00Z")), C, "2026-03-09T15:00:00Z")
				put(account, c+"revsame", day, "2.50", cur, P, "2026-03-09T01:00:00Z", C, "2026-03-09T02:00:00Z")
				put(account, c+"cx", day, "2.00", cur, X, "2026-03-08T15:01:00Z", C, "2026-03-08T20:00:00Z")
				put(account, c+"cx2", "2026-03-09T12:00:00.000Z", "4.00", cur, C, "2026-03-09T12:30:00Z")
				put(account, c+"fin", "2026-03-07T12:00:00.000Z", "3.00", cur, F, "2026-03-09T14:00:00Z")
				put(account, c+"finpaid", day, "6.25", cur, P, "2026-03-08T18:00:00Z", F, "2026-03-10T01:00:00Z")
				put(account, c+"pending", "2026-03-09T03:30:00.000Z", "0.10", cur, X, "2026-03-09T03:31:00Z")
			}
		}
		from, _ := ordersync.ParseDate("2026-03-07")
		to, _ := ordersync.ParseDate("2026-03-11")
		checked := 0
		for _, account := range []string{"sv", "md"} {
			for _, zone := range []string{"America/El_Salvador", "Europe/Madrid", "UTC"} {
				loc, err := ordersync.ParseZone(zone)
				if err != nil {
					t.Fatal(err)
				}
				totals, err := db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: account, From: from, To: to, Location: loc})
				if err != nil {
					t.Fatal(err)
				}
				days := map[string]ordersync.DaySpan{}
				for _, d := range ordersync.ReportDays(from, to, loc) {
					days[d.Date] = d
				}
				for _, d := range totals.Days {
					for figure, tally := range map[string]ordersync.Tally{"created": d.Created, "paid": d.Paid,
						"cancelled": d.Cancelled, "finalized": d.Finalized, "reversed": d.Reversed} {
						{
							f := ordersync.OrderFilter{Account: account, Currency: d.Currency, Limit: 1000, Count: true}
							figureFilters[figure](&f, days[d.Date])
							page, err := db.ListOrders(ctx, f)
							if err != nil {
								t.Fatalf("ListOrders(%+v): %v", f, err)
							}
							sum := ordersync.AmountFromInt(0)
							for _, o := range page.Orders {
								sum = sum.Add(o.Order.Total)
							}
							want, err := ordersync.ParseAmount(tally.Total)
							if err != nil {
								t.Fatal(err)
							}
							if len(page.Orders) != tally.Count || *page.Total != tally.Count || sum.Cmp(want) != 0 {
								t.Errorf("%s %s %s %s in %s: the figure is %d / %s, its orders %d (count %d) / %s",
									account, d.Date, d.Currency, figure, zone, tally.Count, tally.Total, len(page.Orders), *page.Total, sum)
							}
							checked++
						}
					}
				}
			}
		}
		if checked < 100 {
			t.Errorf("only %d figures checked", checked)
		}
	})
}

// TestCollectedGroup: the status group collected selects the orders whose
// payment was taken and not reversed: PAID and FINALIZED, never one paid
// and then cancelled, nor one pending or cancelled unpaid, searched or not.
func TestCollectedGroup(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		seq := int64(0)
		put := func(code string, statuses ...ordersync.Status) {
			for _, st := range statuses {
				seq++
				apply(t, db, fetched(orderDoc(t, code, int(seq)+100, st), seq))
			}
		}
		put("paid", ordersync.StatusPaid)
		put("fin", ordersync.StatusPaid, ordersync.StatusFinalized)
		put("finonly", ordersync.StatusFinalized)
		put("rev", ordersync.StatusPaid, ordersync.StatusCancelled)
		put("cx", ordersync.StatusPending, ordersync.StatusCancelled)
		put("pending", ordersync.StatusPending)
		for _, q := range []string{"", "josé"} {
			got := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Statuses: ordersync.Collected, Q: q, Sort: ordersync.SortCreatedAsc})
			slices.Sort(got)
			if want := []string{"fin", "finonly", "paid"}; !slices.Equal(got, want) {
				t.Errorf("collected (q %q): %v; want %v", q, got, want)
			}
		}
	})
}
