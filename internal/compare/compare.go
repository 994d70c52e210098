// Package compare holds a mirror against the service's orders, as the demo
// and the chaos run report it: how many orders the mirror has and how many
// match field for field (ordersync.DiffOrders).
package compare

import "github.com/ordersync/ordersync"

// MirrorMatch is how far a mirror holds the service's orders, as the demo
// and the chaos runs report it: how many orders were compared, how many
// the mirror has, how many match field for field (DiffOrders), and the
// first few mismatches, "code: what differs".
type MirrorMatch struct {
	Orders, Mirrored, Matching int
	Mismatches                 []string
}

// maxMismatches is how many mismatches a MirrorMatch keeps: the first few
// say what went wrong.
const maxMismatches = 5

// Compare counts want, an order of the service's, against got, the
// mirror's copy of it, or nil when the mirror has none.
func (m *MirrorMatch) Compare(want, got *ordersync.Order) {
	m.Orders++
	if got == nil {
		return
	}
	m.Mirrored++
	if diffs := ordersync.DiffOrders(want, got); len(diffs) == 0 {
		m.Matching++
	} else {
		m.Mismatch(want.OrderCode + ": " + diffs[0])
	}
}

// Mismatch keeps a mismatch while fewer than maxMismatches are kept.
func (m *MirrorMatch) Mismatch(s string) {
	if len(m.Mismatches) < maxMismatches {
		m.Mismatches = append(m.Mismatches, s)
	}
}
