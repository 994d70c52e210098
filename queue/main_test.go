package queue

import (
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
)

func TestMain(m *testing.M) {
	// The parallel tests wait on their servers' timers (ack waits, leases,
	// disk recovery), not on a CPU.
	testenv.WaitingParallel(16)
	leak.Main(m)
}
