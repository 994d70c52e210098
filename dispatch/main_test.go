package dispatch_test

import (
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestMain lets more of the parallel tests wait at once: most wait out a
// retry, a Retry-After or an ack wait rather than compute.
func TestMain(m *testing.M) {
	testenv.WaitingParallel(16)
	leak.Main(m)
}
