package ordersync

import (
	"context"
)

// ExportParams selects what an export reads from the mirror.
type ExportParams struct {
	// Filter selects and sorts the orders, as a listing does; its After,
	// Limit, Offset and Count do not apply: an export has every order the
	// rest of the filter selects, in the order a listing's pages give them.
	Filter OrderFilter
	// LineItems and StatusChanges say whether each order comes with its
	// line items and its recorded status changes.
	LineItems     bool
	StatusChanges bool
	// Fields says which of each order's own fields the export writes; the
	// reader may leave the others empty. The zero value reads them all.
	Fields ExportFields
	// BatchSize is how many orders one read takes (default 1,000).
	BatchSize int
}

// ExportFields names the fields of an order an export writes, so that a
// reader can skip the rest: an export reads every order of the mirror, and
// on SQLite each column read costs a call into the database.
type ExportFields int

// Fields of an order an export writes.
const (
	// ExportEveryField is every field a listing gives.
	ExportEveryField ExportFields = iota
	// ExportOrderFields are the orders file's: the account; the order's
	// code, id, reference, name and status; the store's currency; the
	// subtotal, total, shipping, discount and surcharge; the created time;
	// the payment's authorization code and buyer; the sync's paid and
	// status-changed times.
	ExportOrderFields
	// ExportRepeatedFields are what each row of the line items' and status
	// changes' files repeats of its order: the account, the order's code,
	// reference and status, the store's currency and the created time.
	ExportRepeatedFields
)

// ExportedOrder is one order as an export reads it.
type ExportedOrder struct {
	*MirroredOrder
	// StatusChanges are the order's transitions, oldest first, when the
	// export asked for them.
	StatusChanges []StatusChange
}

// OrderExporter reads the mirror for exports: in batches, each its own
// short read, so that an export of any size holds no long transaction
// (which would keep SQLite's WAL from being checkpointed) and no more than
// a batch in memory.
type OrderExporter interface {
	// ExportOrders calls fn with the orders params select, in the filter's
	// sort (the listing's: orders without the sort's value last), a batch
	// at a time. It stops at fn's first error or the context's end and
	// returns it.
	ExportOrders(ctx context.Context, params ExportParams, fn func(batch []ExportedOrder) error) error
	// StoreTimeZone is the time zone the account's latest fetched order
	// names for its store, "" before the first.
	StoreTimeZone(ctx context.Context, account string) (string, error)
}
