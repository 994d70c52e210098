package ordersync

import "time"

// StatusChange is one recorded status transition of an order: when the
// mirror saw it (the time of the fetch that found the new status, not a
// time the service reports) and why that fetch ran.
type StatusChange struct {
	StatusTransition
	At    time.Time
	Cause Cause
}

// DocumentChange is a fetch that changed an order's mirrored document
// after its first fetch: when the fetch was made, why it ran, and which
// fields of the detail changed, as ChangedFields names them (names only,
// never values: they may be a buyer's data). Fields is empty when only
// parts of the document that Order does not read changed.
type DocumentChange struct {
	Account   string
	OrderCode string
	At        time.Time
	Cause     Cause
	Fields    []string
}

// OrderHistory is what the mirror still keeps of how one order changed,
// each list newest first: its document changes (kept as long as the event
// log), its status changes (kept for good), and its outbox messages, the
// PAID trigger among them (published ones kept for the outbox's
// retention; SentAt set, Payload left out).
type OrderHistory struct {
	DocumentChanges []DocumentChange
	StatusChanges   []StatusChange
	Messages        []OutboxMessage
}
