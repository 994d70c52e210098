package ordersync

import (
	"context"
	"time"
)

// InboundEvent is a webhook as received and queued: the raw body exactly as
// the provider sent it, plus what the receiver knew when it answered.
type InboundEvent struct {
	// MsgID is the deduplication key (Nats-Msg-Id): a hash of the account
	// and the raw body, so a redelivered webhook is stored once.
	MsgID      string
	Account    string
	Body       []byte
	ReceivedAt time.Time
	Signature  SignatureVerdict
	// Event is Body as the receiver parsed it, carried beside the body so
	// that nobody parses it again; nil for an event queued without it (by
	// an earlier release, or a replay of a dead letter): parse Body.
	Event *Event
	// Ignored is set when the event is not about a payment-link order; such
	// events are queued only to be logged, never fetched.
	Ignored IgnoreReason
	// Replay is set when the event is a replay of dead letter ReplayOf.
	ReplayOf int64
	// Cause is why the event was queued: a webhook, a replay, a reconcile
	// request or a track request.
	Cause Cause
	// TraceParent is the W3C traceparent of the hop that queued the event,
	// which the worker's spans continue; "" with tracing off.
	TraceParent string
}

// EventPublisher makes an event durable. It returns only after the queue
// has acknowledged the event; duplicate reports that an event with the same
// MsgID was already stored.
type EventPublisher interface {
	PublishEvent(ctx context.Context, ev *InboundEvent) (duplicate bool, err error)
}

// QueuedEvent is one queued event handed to a worker. A worker settles every
// queued event exactly once: Ack after the mirror committed, Retry for a
// transient failure, Term after recording a dead letter.
type QueuedEvent interface {
	Event() *InboundEvent
	// Attempt is 1 the first time the event is handed out, 2 the second, ….
	Attempt() int
	Ack(ctx context.Context) error
	// Retry asks for redelivery after delay.
	Retry(delay time.Duration) error
	// Extend tells the queue the event is still being worked on.
	Extend() error
	// Term drops the event for good.
	Term() error
}

// EventSource hands queued events to workers.
type EventSource interface {
	// Next waits up to wait for at least one event and returns at most max.
	// It returns as soon as one is there (a long poll: a long wait costs
	// latency nothing), and an empty slice, not an error, when none arrived
	// in time.
	Next(ctx context.Context, max int, wait time.Duration) ([]QueuedEvent, error)
	// Pending is the number of events not yet delivered to any worker.
	Pending(ctx context.Context) (uint64, error)
}

// MessagePublisher publishes outgoing messages durably, each deduplicated
// by its MsgID.
type MessagePublisher interface {
	// PublishMessages publishes msgs in order and returns after the server
	// acknowledged them. It reports, for the first n messages, whether each
	// was a duplicate: n is how many in a row, from the first, the server
	// acknowledged, and err says why message n was not. Messages after n
	// may have been stored as well; publishing them again is harmless, as
	// their MsgID makes the server drop the copy.
	PublishMessages(ctx context.Context, msgs []OutboxMessage) (duplicates []bool, err error)
}
