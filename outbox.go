package ordersync

import (
	"context"
	"time"
)

// OutboxMessage is an order event committed with the mirror change that
// caused it, waiting to be published.
type OutboxMessage struct {
	ID        int64
	Account   string
	OrderCode string
	Subject   string
	// MsgID is the Nats-Msg-Id: account, order, status and transition number,
	// so a re-publish after a crash is dropped by JetStream's deduplication.
	MsgID     string
	Payload   []byte // the MirroredOrder JSON
	CreatedAt time.Time
	// SentAt is when the relay published the message; nil while it waits.
	SentAt *time.Time
	// From is the status the change left ("" when the order was
	// new); the payload holds the one it reached.
	From Status
	// To is the status the change reached, as the payload's "orderStatus"
	// says it; "" when not known (a message read back from the outbox).
	To Status
	// StatusChangeAt is where an HTTP delivery's body puts "statusChange"
	// in the payload (MirroredOrder.EncodeEvent); 0 when not known.
	StatusChangeAt int
	// TraceParent is the W3C traceparent of the apply that queued the
	// message (ApplyParams.TraceParent), and on the wire the relay's; ""
	// with tracing off.
	TraceParent string
}

// Outbox is the outbox as the relay drains it.
type Outbox interface {
	// PendingOutbox returns up to limit unsent messages, oldest first.
	PendingOutbox(ctx context.Context, limit int) ([]OutboxMessage, error)
	MarkOutboxSent(ctx context.Context, ids []int64, at time.Time) error
}
