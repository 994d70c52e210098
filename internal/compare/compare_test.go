package compare

import (
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestMirrorMatch counts compared, mirrored and matching orders and keeps
// only the first mismatches.
func TestMirrorMatch(t *testing.T) {
	order := func(code, status string) *ordersync.Order {
		return &ordersync.Order{OrderCode: code, OrderStatus: ordersync.Status(status)}
	}
	var m MirrorMatch
	m.Compare(order("a", "PAID"), order("a", "PAID"))
	m.Compare(order("b", "PAID"), nil)
	for _, code := range []string{"c", "d", "e", "f", "g", "h"} {
		m.Compare(order(code, "PAID"), order(code, "PENDING"))
	}
	if m.Orders != 8 || m.Mirrored != 7 || m.Matching != 1 {
		t.Errorf("counted %d orders, %d mirrored, %d matching; want 8, 7, 1", m.Orders, m.Mirrored, m.Matching)
	}
	if len(m.Mismatches) != maxMismatches || !strings.HasPrefix(m.Mismatches[0], "c: OrderStatus") {
		t.Errorf("mismatches %q, want the first %d, c's first", m.Mismatches, maxMismatches)
	}
	m.Mismatch("z: missing")
	if len(m.Mismatches) != maxMismatches {
		t.Errorf("%d mismatches kept, want at most %d", len(m.Mismatches), maxMismatches)
	}
}
