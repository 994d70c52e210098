package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestTransitionRangesAtAnyInstant: a cancelled, finalized or reversed
// range whose bounds fall anywhere in a quarter hour (the read side's
// bucket), to the second or within one, lists exactly the orders whose
// figure's time is in it, for one store and for all.
func TestTransitionRangesAtAnyInstant(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		base := time.Date(2026, 3, 8, 15, 0, 0, 0, time.UTC)
		type change struct {
			figure string
			at     time.Time
		}
		want := map[string]change{}
		// Each order's first status is fetched an hour before the range's
		// base, its last at its instant: two batches, not a transaction
		// per fetch.
		var first, last []ordersync.ApplyParams
		seq := int64(0)
		put := func(account, code string, at time.Time, statuses ...ordersync.Status) {
			t.Helper()
			for i, st := range statuses {
				seq++
				p := fetched(orderDoc(t, code, int(seq)+5000, st, func(doc map[string]any) {
					doc["created"] = base.Add(-2 * time.Hour).Format("2006-01-02T15:04:05.000Z")
				}), seq)
				p.Account, p.FetchedAt = account, base.Add(-time.Hour)
				if i == len(statuses)-1 {
					p.FetchedAt = at
					last = append(last, p)
				} else {
					first = append(first, p)
				}
			}
		}
		const P, C, F, X = ordersync.StatusPaid, ordersync.StatusCancelled, ordersync.StatusFinalized, ordersync.StatusPending
		for i := range 30 {
			at := base.Add(time.Duration(i)*277*time.Second + time.Duration(i)*137*time.Millisecond)
			account := []string{ordersync.DefaultAccount, "md"}[i%2]
			code := fmt.Sprintf("o%02d", i)
			switch i % 3 {
			case 0:
				put(account, code, at, X, C)
				want[code] = change{"cancelled", at}
			case 1:
				put(account, code, at, P, C)
				want[code] = change{"reversed", at}
			case 2:
				put(account, code, at, P, F)
				want[code] = change{"finalized", at}
			}
		}
		apply(t, db, first...)
		apply(t, db, last...)
		set := map[string]func(f *ordersync.OrderFilter, from, to time.Time){
			"cancelled": func(f *ordersync.OrderFilter, from, to time.Time) { f.CancelledFrom, f.CancelledTo = from, to },
			"finalized": func(f *ordersync.OrderFilter, from, to time.Time) { f.FinalizedFrom, f.FinalizedTo = from, to },
			"reversed":  func(f *ordersync.OrderFilter, from, to time.Time) { f.ReversedFrom, f.ReversedTo = from, to },
		}
		bounds := []time.Time{{}, base.Add(-time.Minute), base, base.Add(15 * time.Minute)}
		// Bounds across the orders' two hours, off the quarter hours by
		// seconds and by each quarter of a second, some in one quarter
		// hour (3 and 4); thoroughEnv takes all twelve.
		steps := []int{1, 3, 4, 7, 11}
		if thorough(0, 1) == 1 {
			steps = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
		}
		for _, i := range steps {
			bounds = append(bounds, base.Add(time.Duration(i)*673*time.Second+time.Duration(i%4)*250*time.Millisecond))
		}
		// A range inside the quarter hour 15:45-16:00, from 15:45:30.5 to
		// 15:50:00.25, with a figure in it (o10, 15:46:11) and two after it
		// in the same quarter hour (o11 and o12): the range ends at its
		// bound, not at the quarter hour's end.
		bounds = append(bounds, base.Add(2730500*time.Millisecond), base.Add(3000250*time.Millisecond))
		checked := 0
		for figure := range set {
			for _, from := range bounds {
				for _, to := range bounds {
					if !to.IsZero() && !from.IsZero() && !to.After(from) || from.IsZero() && to.IsZero() {
						continue
					}
					for _, account := range []string{"", ordersync.DefaultAccount} {
						f := ordersync.OrderFilter{Account: account, Sort: ordersync.SortCreatedAsc, Limit: 1000, Count: true}
						set[figure](&f, from, to)
						got := listCodes(t, db, f)
						slices.Sort(got)
						var expect []string
						for i := range 30 {
							code := fmt.Sprintf("o%02d", i)
							c := want[code]
							if c.figure == figure && (from.IsZero() || !c.at.Before(from)) && (to.IsZero() || c.at.Before(to)) &&
								(account == "" || i%2 == 0) {
								expect = append(expect, code)
							}
						}
						if !slices.Equal(got, expect) {
							t.Errorf("%s from %v to %v, store %q: %v, want %v", figure, from, to, account, got, expect)
						}
						checked++
					}
				}
			}
		}
		// The range is read from the read side: the page says as of when.
		page, err := db.ListOrders(context.Background(), ordersync.OrderFilter{ReversedFrom: base})
		if err != nil || page.AsOf.IsZero() || page.Behind {
			t.Errorf("a reversed range's page: as of %v, behind %v, %v; want as of the indexer's position", page.AsOf, page.Behind, err)
		}
		if checked < 350 {
			t.Errorf("only %d ranges checked", checked)
		}
	})
}
