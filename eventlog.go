package ordersync

import "time"

// EventOutcome is what became of a received webhook event.
type EventOutcome string

// Event outcomes, as recorded in the event log.
const (
	OutcomeSynced       EventOutcome = "synced"        // the order was fetched and mirrored
	OutcomeIgnored      EventOutcome = "ignored"       // not a payment-link order
	OutcomeRejected     EventOutcome = "rejected"      // refused with a 4xx, never queued
	OutcomeDeadLettered EventOutcome = "dead_lettered" // a permanent failure, see dead letters
	// OutcomeAlreadyFetched: acknowledged without a fetch, since the mirror
	// held a fetch of the order sent after the event was received.
	OutcomeAlreadyFetched EventOutcome = "already_fetched"
)

// EventRecord is one row of the event log: the back office's answer to "did
// we hear about this order?". MsgID is the queue's deduplication key, so a
// redelivered event is logged once.
type EventRecord struct {
	MsgID          string
	Account        string
	ReceivedAt     time.Time
	Type           EventType
	OrderType      string
	OrderID        ID
	OrderReference string
	OrderCode      string
	Signature      SignatureVerdict
	Outcome        EventOutcome
	Detail         string
}

// EventFilter selects event log rows, newest first.
type EventFilter struct {
	Account   string
	OrderCode string
	OrderID   ID
	// MsgID selects one webhook by its message id (the hash the receiver
	// dedupes by): is it in the log, and what became of it.
	MsgID string
	Limit int
}
