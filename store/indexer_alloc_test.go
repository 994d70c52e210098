package store

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/ordersync/ordersync"
)

// indexerAllocBudget is the most allocations the indexer may make per
// changed order it takes on SQLite, in passes of 10 status changes (PAID,
// with a buyer's name to index), as the pipeline's small batches come: its
// read of the changes, of the orders' old and new figures and names, and its
// writes of buckets, figures and words. It sits a few percent above the
// count when it was set (141), so that a statement prepared per pass or a second
// read of the orders fails it.
const indexerAllocBudget = 148

// TestIndexerAllocBudget holds the indexer to its allocation budget.
func TestIndexerAllocBudget(t *testing.T) {
	db := openDB(t, sqliteURL(t))
	ctx := context.Background()
	const orders, pass = 200, 10
	doc := func(i int, status ordersync.Status) *ordersync.Order {
		code := fmt.Sprintf("idx%04d", i)
		o, err := ordersync.DecodeOrder(fmt.Appendf(nil, benchDoc, i+1, code, code, code, "index", status, i, code))
		if err != nil {
			t.Fatal(err)
		}
		if status == ordersync.StatusPaid {
			o.Payment = &ordersync.Payment{AuthorizationCode: "204981", Buyer: &ordersync.Buyer{Name: fmt.Sprintf("Ana María %d", i)}}
		}
		return o
	}
	var params []ordersync.ApplyParams
	for i := range orders {
		params = append(params, ordersync.ApplyParams{Account: "default", Order: doc(i, ordersync.StatusPending), Seq: int64(i + 1), Cause: ordersync.CauseWebhook})
	}
	if _, err := db.ApplyOrders(ctx, params); err != nil {
		t.Fatal(err)
	}
	if _, err := db.IndexNow(ctx); err != nil { // statements prepared once
		t.Fatal(err)
	}
	var allocs uint64
	var before, after runtime.MemStats
	for start := 0; start < orders; start += pass {
		params = params[:0]
		for i := start; i < start+pass; i++ {
			params = append(params, ordersync.ApplyParams{Account: "default", Order: doc(i, ordersync.StatusPaid), Seq: int64(orders + i + 1), Cause: ordersync.CauseWebhook})
		}
		if _, err := db.ApplyOrders(ctx, params); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&before)
		n, err := db.IndexNow(ctx)
		runtime.ReadMemStats(&after)
		if err != nil || n != pass {
			t.Fatalf("IndexNow took %d changes, %v; want %d", n, err, pass)
		}
		allocs += after.Mallocs - before.Mallocs
	}
	perOrder := float64(allocs) / orders
	t.Logf("%.1f allocations per changed order indexed (budget %d)", perOrder, indexerAllocBudget)
	if perOrder > indexerAllocBudget {
		t.Errorf("the indexer allocates %.1f times per changed order, over its budget of %d", perOrder, indexerAllocBudget)
	}
}
