package fake_test

import (
	"testing"

	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/store/storetest"
)

// TestStoreConformance holds the fake to what store.DB does on both
// databases.
func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return fake.NewStore() })
}
