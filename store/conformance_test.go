package store

import (
	"testing"

	"github.com/ordersync/ordersync/store/storetest"
)

// TestConformance runs the public conformance suite of the root package's
// store interfaces on both dialects.
func TestConformance(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		storetest.Run(t, func(t *testing.T) storetest.Store {
			// Each case gets a fresh database of the dialect.
			if url[:7] == "sqlite:" {
				return openDB(t, sqliteURL(t))
			}
			return openDB(t, postgresURL(t))
		})
	})
}
