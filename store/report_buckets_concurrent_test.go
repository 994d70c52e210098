package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ordersync/ordersync"
)

// Two processes applying new orders of two currencies, created in the same
// quarter hour, in opposite currency order: the report's buckets must not
// make their transactions deadlock.
func TestReportBucketsConcurrentApplies(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		dbs := []*DB{openDB(t, url), openDB(t, url)}
		const rounds = 40
		var wg sync.WaitGroup
		errs := make(chan error, rounds)
		for r := range rounds {
			wg.Go(func() {
				first, second := "USD", "EUR"
				if r%2 == 1 {
					first, second = second, first
				}
				var batch []ordersync.ApplyParams
				for i, cur := range []string{first, second} {
					o := orderDoc(t, fmt.Sprintf("dl%03d%d", r, i), r*2+i+1, ordersync.StatusPaid, func(doc map[string]any) { doc["store"].(map[string]any)["currencyCode"] = cur })
					batch = append(batch, fetched(o, 1))
				}
				if _, err := dbs[r%2].ApplyOrders(ctx, batch); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent ApplyOrders: %v", err)
		}
	})
}
