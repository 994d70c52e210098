package store

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestStoreScopedDeadLetters: the dead letters listed and counted for a
// store are that store's alone, and with no store every store's, on both
// dialects.
func TestStoreScopedDeadLetters(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		for i, l := range []struct {
			account string
			reason  ordersync.DeadLetterReason
		}{
			{"sv", ordersync.ReasonUnresolved}, {"sv", ordersync.ReasonMalformed},
			{"md", ordersync.ReasonUnresolved}, {"md", ordersync.ReasonUnresolved}, {"md", ordersync.ReasonMalformed},
		} {
			if _, err := db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: l.account + string(rune('a'+i)), Account: l.account,
				Reason: l.reason, Attempts: 1, Body: []byte(`{}`), CreatedAt: testNow.Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		for account, want := range map[string]map[ordersync.DeadLetterReason]int{
			"sv": {ordersync.ReasonUnresolved: 1, ordersync.ReasonMalformed: 1},
			"md": {ordersync.ReasonUnresolved: 2, ordersync.ReasonMalformed: 1},
			"":   {ordersync.ReasonUnresolved: 3, ordersync.ReasonMalformed: 2},
			"no": {},
		} {
			letters, err := db.ListDeadLetters(ctx, ordersync.DeadLetterFilter{Account: account})
			if err != nil {
				t.Fatal(err)
			}
			listed := map[ordersync.DeadLetterReason]int{}
			for _, l := range letters {
				if account != "" && l.Account != account {
					t.Errorf("ListDeadLetters(%q) lists %s's letter %s", account, l.Account, l.MsgID)
				}
				listed[l.Reason]++
			}
			counted, err := db.CountDeadLetters(ctx, ordersync.DeadLetterFilter{Account: account})
			if err != nil {
				t.Fatal(err)
			}
			maps.DeleteFunc(counted, func(_ ordersync.DeadLetterReason, n int) bool { return n == 0 })
			if !maps.Equal(listed, want) || !maps.Equal(counted, want) {
				t.Errorf("store %q: listed %v, counted %v; want %v", account, listed, counted, want)
			}
		}
		// A store and a reason together narrow to both.
		letters, err := db.ListDeadLetters(ctx, ordersync.DeadLetterFilter{Account: "md", Reason: ordersync.ReasonUnresolved})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range letters {
			ids = append(ids, l.MsgID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"mdc", "mdd"}) {
			t.Errorf("md's unresolved letters = %v; want mdc, mdd", ids)
		}
	})
}

// TestStoreScopedOrderReads: an order is found by its code in its own
// store alone, and an export with line items and status changes, the
// console's line-item and status-change files, holds one store's orders
// with their own items and changes, on both dialects.
func TestStoreScopedOrderReads(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		twoStores(t, db)
		if m, err := db.FindOrderByCode(ctx, "sv", "s1"); err != nil || m.Account != "sv" || m.Order.OrderCode != "s1" {
			t.Errorf("FindOrderByCode(sv, s1) = %+v, %v", m, err)
		}
		if _, err := db.FindOrderByCode(ctx, "md", "s1"); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("FindOrderByCode(md, s1): %v, want not found", err)
		}
		for account, want := range map[string][]string{"sv": {"sv/s1", "sv/s2", "sv/s3"}, "md": {"md/m1", "md/m2"}} {
			var got []string
			err := db.ExportOrders(ctx, ordersync.ExportParams{Filter: ordersync.OrderFilter{Account: account},
				LineItems: true, StatusChanges: true, BatchSize: 2}, func(batch []ordersync.ExportedOrder) error {
				for _, e := range batch {
					got = append(got, e.Account+"/"+e.Order.OrderCode)
					if len(e.StatusChanges) == 0 || len(e.Order.LineItems) == 0 {
						t.Errorf("export of %s: %s has %d status changes, %d line items", account, e.Order.OrderCode,
							len(e.StatusChanges), len(e.Order.LineItems))
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("ExportOrders(%s, line items, status changes) = %v; want %v", account, got, want)
			}
		}
	})
}

// TestEveryStoreOffsetPastSortedPart checks that an offset past the orders
// with the sort's value, in a listing of every store, continues among the
// orders without one: the page's query merges each store's rows, and the
// count of the part it skips takes its own arguments.
func TestEveryStoreOffsetPastSortedPart(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		twoStores(t, db)
		f := ordersync.OrderFilter{Sort: ordersync.SortPaidDesc, Limit: 100}
		all, err := db.ListOrders(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for offset := 1; offset < len(all.Orders); offset++ {
			f.Offset = offset
			p, err := db.ListOrders(ctx, f)
			if err != nil {
				t.Fatalf("offset %d: %v", offset, err)
			}
			var got, want []string
			for _, o := range p.Orders {
				got = append(got, o.Account+"/"+o.Order.OrderCode)
			}
			for _, o := range all.Orders[offset:] {
				want = append(want, o.Account+"/"+o.Order.OrderCode)
			}
			if !slices.Equal(got, want) {
				t.Errorf("every store by paid time, offset %d: %v; want %v", offset, got, want)
			}
		}
	})
}
