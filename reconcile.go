package ordersync

import (
	"context"
	"time"
)

// ReconcileFilter selects orders the reconciler should re-fetch.
type ReconcileFilter struct {
	Account string
	// All selects every order, not only those that can still change.
	All bool
	// Since selects orders created at or after it.
	Since time.Time
	Limit int
}

// ReconcileSource lists orders for an on-demand reconcile, most overdue
// first.
type ReconcileSource interface {
	ListReconcileCandidates(ctx context.Context, filter ReconcileFilter) ([]OrderRef, error)
}
