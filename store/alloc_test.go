package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/ordersync/ordersync"
)

// applyAllocBudget is the most allocations the mirror write of one new
// order may cost on SQLite: the order with three line items, its webhook's
// event log row, its history and its outbox message, in one ApplyOrders
// call under a context that can end, as the pool's. It sits a few percent
// above the count when it was last set (407, with the mirror change log's
// row of each changed order), so that a change of Go's runtime or of the
// driver does not fail it, while a second encoding of the document, a
// statement built anew per call or a goroutine per statement does.
const applyAllocBudget = 415

// TestApplyAllocBudget holds the mirror write to its allocation budget: a
// count, not a time, so it does not depend on the machine.
func TestApplyAllocBudget(t *testing.T) {
	db := openDB(t, sqliteURL(t))
	const runs = 100
	// The orders are decoded before counting starts: decoding is the
	// fetch's cost, not the write's.
	params := make([][]ordersync.ApplyParams, runs+1) // AllocsPerRun runs once more to warm up
	for i := range params {
		code := fmt.Sprintf("alloc%03d", i)
		o, err := ordersync.DecodeOrder(fmt.Appendf(nil, benchDoc, i+1, code, code, code, "alloc", ordersync.StatusPending, i, code))
		if err != nil {
			t.Fatal(err)
		}
		params[i] = []ordersync.ApplyParams{{Account: "default", Order: o, Seq: int64(i + 1), Cause: ordersync.CauseWebhook,
			Events: []ordersync.EventRecord{{MsgID: fmt.Sprintf("msg-alloc-%03d", i), Type: ordersync.EventCreated}}}}
	}
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		res, err := db.ApplyOrders(t.Context(), params[next]) // cancellable, as the pool's is
		if err != nil || !res[0].Created {
			t.Fatalf("ApplyOrders: %v, %+v", err, res)
		}
		next++
	})
	t.Logf("%.0f allocations per new order (budget %d)", allocs, applyAllocBudget)
	if allocs > applyAllocBudget {
		t.Errorf("the mirror write allocates %.0f times per new order, over its budget of %d", allocs, applyAllocBudget)
	}
}

// statusChangeAllocBudget is the most allocations the mirror write of one
// status change may cost on SQLite: an order with three line items and a
// metadata entry, mirrored before, fetched PAID, with its webhook's event
// log row, its history and its outbox message. Like applyAllocBudget it
// sits a little above the count when it was last lowered (443, under a
// context that can end, as the pool's), by less than a decoding of the
// stored document costs (16), so that writing the line items again or a
// second decoding fails it.
const statusChangeAllocBudget = 455

// TestStatusChangeAllocBudget holds the write of a status change to its
// allocation budget.
func TestStatusChangeAllocBudget(t *testing.T) {
	db := openDB(t, sqliteURL(t))
	ctx := context.Background()
	const runs = 100
	params := make([][]ordersync.ApplyParams, runs+1)
	for i := range params {
		code := fmt.Sprintf("alloc%03d", i)
		doc := func(status ordersync.Status) *ordersync.Order {
			o, err := ordersync.DecodeOrder(fmt.Appendf(nil, benchDoc, i+1, code, code, code, "alloc", status, i, code))
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: "default", Order: doc(ordersync.StatusPending), Seq: int64(2*i + 1), Cause: ordersync.CauseWebhook}}); err != nil {
			t.Fatal(err)
		}
		params[i] = []ordersync.ApplyParams{{Account: "default", Order: doc(ordersync.StatusPaid), Seq: int64(2*i + 2), Cause: ordersync.CauseWebhook,
			Events: []ordersync.EventRecord{{MsgID: fmt.Sprintf("msg-alloc-%03d", i), Type: ordersync.EventSuccessPayment}}}}
	}
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		res, err := db.ApplyOrders(t.Context(), params[next]) // cancellable, as the pool's is
		if err != nil || !res[0].Changed || res[0].Status != ordersync.StatusPaid {
			t.Fatalf("ApplyOrders: %v, %+v", err, res)
		}
		next++
	})
	t.Logf("%.0f allocations per status change (budget %d)", allocs, statusChangeAllocBudget)
	if allocs > statusChangeAllocBudget {
		t.Errorf("the mirror write allocates %.0f times per status change, over its budget of %d", allocs, statusChangeAllocBudget)
	}
}
