package ordersync

import (
	"context"
	"time"
)

// OrderEvent is one message of the orders stream, as the outbox relay
// published it.
type OrderEvent struct {
	// Subject is the domain subject: SubjectPaid or SubjectStatusPrefix+STATUS.
	Subject string
	// MsgID is the outbox message's Nats-Msg-Id, unique per order event.
	MsgID       string
	Payload     []byte // the MirroredOrder JSON
	PublishedAt time.Time
	// From is the status the change left ("" for a new order, or an
	// event published before it was recorded).
	From Status
	// Account, OrderCode and To (the status reached) are what the payload
	// says, and StatusChangeAt where a delivery's body puts "statusChange"
	// (OutboxMessage.StatusChangeAt), as the relay published them: all
	// set, or StatusChangeAt 0 for an event that came without them.
	Account        string
	OrderCode      string
	To             Status
	StatusChangeAt int
	// TraceParent is the relay's W3C traceparent, which the delivery's
	// span continues; "" when the event came without one.
	TraceParent string
}

// QueuedOrderEvent is an order event handed to one endpoint's deliverer.
// It is settled once: Ack when the endpoint took it or it became a dead
// letter, Release when a deliverer that stops hands it back undelivered;
// left unsettled (a process that died), it comes back after the queue's
// ack wait.
type QueuedOrderEvent interface {
	Event() OrderEvent
	Ack(ctx context.Context) error
	// Extend tells the queue the event is still being worked on, as while
	// its retries wait.
	Extend() error
	// Release hands the event back at once, for the next reader's Resume
	// to take back before anything later.
	Release() error
}

// OrderEventSource hands out one endpoint's order events.
type OrderEventSource interface {
	// Resume is called by a new reader before its first Next. Events an
	// earlier reader (one that stopped acting by stoppedBy: another process
	// before it took over, or this one) left unsettled come back only after
	// the queue's ack wait, while later events are there at once. So Resume
	// takes back what was left, holding any later event that arrives
	// meanwhile, until all of it is back or the ack wait after stoppedBy has
	// passed; the next Next returns everything it holds, in the order
	// published, however many. It returns an error only when ctx ends, and
	// then has released what it took back.
	Resume(ctx context.Context, stoppedBy time.Time) error
	// Next waits up to wait for at least one event and returns at most max
	// (see Resume), in the order published, as soon as one is there (a long
	// poll); an empty slice, not an error, when none arrived. When ctx ends
	// it ends its pull, releases what it holds and what the pull brought,
	// and returns ctx's error: a reader that stops reads no more, and
	// leaves nothing to wait out the ack wait. An event the queue sent
	// this reader and lost on the way comes back only after the ack wait;
	// Next then holds what came after it, as Resume does, and returns
	// nothing meanwhile, at least once a second.
	Next(ctx context.Context, max int, wait time.Duration) ([]QueuedOrderEvent, error)
}

// OrderEventStream is the orders stream as HTTP deliveries read it: each
// endpoint through its own durable consumer, which every process shares and
// which resumes where it stopped.
type OrderEventStream interface {
	// EndpointEvents creates or updates the endpoint's consumer, selecting
	// events, and returns its source. A new consumer starts at the events
	// published from `from` on (the endpoint's creation), however late the
	// consumer itself is created. ackWait is how long a reader may hold an
	// event without extending it before the event is handed out again; zero
	// is the queue's default.
	EndpointEvents(ctx context.Context, endpointID string, events []HookEvent, from time.Time, ackWait time.Duration) (OrderEventSource, error)
	// DeleteEndpointEvents deletes the endpoint's consumer; deleting one
	// that does not exist is not an error.
	DeleteEndpointEvents(ctx context.Context, endpointID string) error
	// OrderEventsSince calls fn for every stored event of events published
	// at or after since, in the order published, until the stream's end
	// when it was called.
	OrderEventsSince(ctx context.Context, since time.Time, events []HookEvent, fn func(OrderEvent) error) error
}
