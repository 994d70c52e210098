package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestPaidRangePagesWalkOrSort: a page of a paid range in the created sort
// lists exactly the orders a sort of the whole range would, page after
// page, whether the store's newest orders hold it (the walk of the
// created index) or not (the sort), for one store and for all, newest or
// oldest first, with its count.
func TestPaidRangePagesWalkOrSort(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		db.walkedEntries = 8
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		type order struct {
			code, account string
			status        ordersync.Status
			created, paid time.Time
		}
		var orders []order
		statuses := []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized, ordersync.StatusPending, ordersync.StatusPaid,
			ordersync.StatusCancelled}
		var batch []ordersync.ApplyParams // one transaction, not one per order
		for i := range 80 {
			o := order{code: fmt.Sprintf("w%02d", i), account: []string{ordersync.DefaultAccount, "md"}[i%2], status: statuses[i%len(statuses)],
				created: base.Add(time.Duration(i) * 6 * time.Hour)}
			p := fetched(orderDoc(t, o.code, 9000+i, o.status, func(doc map[string]any) {
				doc["created"] = o.created.Format("2006-01-02T15:04:05.000Z")
			}), int64(i+1))
			// Paid within hours of its creation, or weeks later: a range
			// of recent payments then holds orders created long before.
			p.Account, p.FetchedAt = o.account, o.created.Add(time.Duration((i*7919)%(40*24))*time.Hour/(1+time.Duration(i%3)*10))
			batch = append(batch, p)
			if o.status.IsPaidState() {
				o.paid = p.FetchedAt
			}
			orders = append(orders, o)
		}
		apply(t, db, batch...)
		collected := []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized}
		bounds := []time.Time{{}, base.AddDate(0, 0, 3), base.AddDate(0, 0, 10), base.AddDate(0, 0, 19), base.AddDate(0, 0, 60)}
		const limit = 3
		walked, sorted := 0, 0
		for _, account := range []string{"", ordersync.DefaultAccount} {
			for _, st := range [][]ordersync.Status{nil, collected, {ordersync.StatusFinalized}} {
				for _, sort := range []ordersync.OrderSort{ordersync.SortCreatedDesc, ordersync.SortCreatedAsc} {
					for _, from := range bounds {
						for _, to := range bounds {
							if from.IsZero() && to.IsZero() || !from.IsZero() && !to.After(from) {
								continue
							}
							var want []order
							for _, o := range orders {
								if (account == "" || o.account == account) && (st == nil || slices.Contains(st, o.status)) && !o.paid.IsZero() &&
									(from.IsZero() || !o.paid.Before(from)) && (to.IsZero() || o.paid.Before(to)) {
									want = append(want, o)
								}
							}
							if sort == ordersync.SortCreatedDesc {
								slices.Reverse(want)
							}
							// Whether a store's newest walkedEntries orders
							// of the statuses hold its first page.
							for _, s := range []string{ordersync.DefaultAccount, "md"} {
								var newest []order
								for _, o := range orders {
									if o.account == s && (st == nil || slices.Contains(st, o.status)) {
										newest = append(newest, o)
									}
								}
								if sort == ordersync.SortCreatedDesc {
									slices.Reverse(newest)
								}
								n := 0
								for _, o := range newest[:min(len(newest), db.walkedEntries)] {
									if !o.paid.IsZero() && (from.IsZero() || !o.paid.Before(from)) && (to.IsZero() || o.paid.Before(to)) {
										n++
									}
								}
								if n > limit {
									walked++
								} else {
									sorted++
								}
							}
							f := ordersync.OrderFilter{Account: account, Statuses: st, PaidFrom: from, PaidTo: to, Sort: sort, Limit: limit, Count: true}
							name := fmt.Sprintf("store %q, statuses %v, %s, paid from %v to %v", account, st, sort, from, to)
							var got []string
							for pages := 0; ; pages++ {
								page, err := db.ListOrders(t.Context(), f)
								if err != nil {
									t.Fatalf("%s: %v", name, err)
								}
								if page.Total == nil || *page.Total != len(want) {
									t.Errorf("%s: counted %v, want %d", name, page.Total, len(want))
								}
								for _, m := range page.Orders {
									got = append(got, m.Order.OrderCode)
								}
								if page.Next == nil || pages > len(orders) {
									break
								}
								f.After = page.Next
							}
							codes := []string{}
							for _, o := range want {
								codes = append(codes, o.code)
							}
							if !slices.Equal(got, codes) {
								t.Errorf("%s: pages %v, want %v", name, got, codes)
							}
							// A page at an offset is the same rows.
							f.After, f.Offset = nil, 2
							if got := listCodes(t, db, f); !slices.Equal(got, codes[min(2, len(codes)):min(2+limit, len(codes))]) {
								t.Errorf("%s, offset 2: %v, want %v", name, got, codes[min(2, len(codes)):min(2+limit, len(codes))])
							}
						}
					}
				}
			}
		}
		if walked < 20 || sorted < 20 {
			t.Errorf("first pages the walk holds: %d, that it does not: %d; want both", walked, sorted)
		}
	})
}

// TestPaidRangePageWalksTheCreatedIndex: on SQLite, the page of the
// collected orders paid in a month reads each store's created index and
// the paid times from the index on (row, paid time), not the orders'
// rows; the sort of the range's index is there only for when the walk
// does not hold the page.
func TestPaidRangePageWalksTheCreatedIndex(t *testing.T) {
	db := openDB(t, sqliteURL(t))
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	stores := []string{ordersync.DefaultAccount, "eu"}
	for name, f := range map[string]ordersync.OrderFilter{
		"one store":  {Account: ordersync.DefaultAccount, Statuses: ordersync.Collected, PaidFrom: day.AddDate(0, -1, 0), PaidTo: day},
		"all stores": {Statuses: ordersync.Collected, PaidFrom: day.AddDate(0, -1, 0), PaidTo: day},
	} {
		names := searchPlan{}
		if f.Account == "" {
			names.stores = stores
		}
		page, _, args := db.partQueries(everyOrderColumn, f, names, "created_at", "created_at", "DESC", 51,
			func(string) ([]string, []any) { return []string{"created_at IS NOT NULL"}, nil })
		plan := strings.Join(explain(t, db, page, append(args, 51, 0)...), "\n")
		want := 1
		if f.Account == "" {
			want = len(stores)
		}
		if strings.Count(plan, "COVERING INDEX orders_account_created_id (account=?") != want ||
			strings.Count(plan, "COVERING INDEX orders_row_times (id=?") != want {
			t.Errorf("%s: plan\n%s\nwant %d walks of orders_account_created_id, each with orders_row_times", name, plan, want)
		}
	}
}
