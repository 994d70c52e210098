package worker_test

import (
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
)

// TestMain lets more of the parallel tests wait at once: most wait out a
// window, a backoff or an ack wait rather than compute.
func TestMain(m *testing.M) {
	testenv.WaitingParallel(16)
	leak.Main(m, testdb.Close)
}
