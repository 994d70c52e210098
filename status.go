package ordersync

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Status is an order's status as the payment link service reports it.
type Status string

// The statuses of interface version 2.0.
const (
	StatusPending   Status = "PENDING"
	StatusPaid      Status = "PAID"
	StatusCancelled Status = "CANCELLED"
	StatusFinalized Status = "FINALIZED"
)

// Statuses lists every known status, in life-cycle order.
var Statuses = []Status{StatusPending, StatusPaid, StatusCancelled, StatusFinalized}

// Collected is the back office's one meaning of "paid": the payment was
// taken (PAID or FINALIZED) and not reversed. A reversed order ends
// CANCELLED, so an order in one of these statuses is not reversed, and
// the statuses alone select the collected orders. The status filter
// offers them by the name StatusGroupCollected.
var Collected = []Status{StatusPaid, StatusFinalized}

// StatusGroupCollected names Collected in a status filter.
const StatusGroupCollected = "collected"

// PaymentState is what became of an order's payment, as exports name it:
// "collected" (Collected), "reversed" (CANCELLED with a paid time: paid,
// or shown paid by evidence, then cancelled), or "" (never paid).
func PaymentState(status Status, paidAt *time.Time) string {
	switch {
	case slices.Contains(Collected, status):
		return "collected"
	case status == StatusCancelled && paidAt != nil:
		return "reversed"
	}
	return ""
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusPaid, StatusCancelled, StatusFinalized:
		return true
	}
	return false
}

// CanChange reports whether an order in this status may still change
// upstream, so the reconciler keeps re-fetching it. An unknown status is
// treated as changeable: better one fetch too many than a stale mirror.
func (s Status) CanChange() bool {
	return s != StatusCancelled && s != StatusFinalized
}

// IsPaidState reports whether an order in this status has been paid: the
// statuses that fire the PAID trigger the first time the mirror sees them.
func (s Status) IsPaidState() bool { return s == StatusPaid || s == StatusFinalized }

// ParseStatus accepts a status in any letter case.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToUpper(strings.TrimSpace(s)))
	if !st.Valid() {
		return "", fmt.Errorf("unknown order status %q (want PENDING, PAID, CANCELLED or FINALIZED)", s)
	}
	return st, nil
}
