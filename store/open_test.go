package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ordersync/ordersync/store"
)

// TestOpenFreshSQLiteConcurrently: several processes starting at once on a
// new database file (a scale-out on one host, tests) all open it. The
// switch to WAL takes a lock SQLite does not wait for, so without the
// retry some of them fail with "database is locked".
func TestOpenFreshSQLiteConcurrently(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		path := filepath.Join(t.TempDir(), "fresh.db")
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := store.Open(context.Background(), store.Config{URL: path})
				if err == nil {
					db.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, opener %d: %v", round, i, err)
			}
		}
	}
}
