package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
)

// endpointAckWait is how long an endpoint's deliverer may hold an event
// without extending it before another process gets it, unless the
// deliverer asks for another.
const endpointAckWait = 30 * time.Second

// endpointMaxAckPending bounds the events one endpoint holds unsettled
// across every process, so a failing endpoint keeps a bounded backlog in
// memory and the rest waits in the stream.
const endpointMaxAckPending = 1000

// endpointConsumer names an endpoint's durable consumer.
func (q *Queue) endpointConsumer(id string) string { return q.cfg.Consumer + "-endpoint-" + id }

// hookSubject is the filter subject of an endpoint's events. It is one
// subject, never a list: a consumer with several filter subjects
// needs nats-server 2.10, and 2.9 is supported. Both events are every
// subject of the orders stream, so their filter is the stream's wildcard.
func (q *Queue) hookSubject(events []ordersync.HookEvent) (string, error) {
	var paid, status bool
	for _, ev := range events {
		switch ev {
		case ordersync.HookOrderPaid:
			paid = true
		case ordersync.HookOrderStatusChanged:
			status = true
		default:
			return "", fmt.Errorf("%w: event %q", ordersync.ErrInvalidEndpoint, ev)
		}
	}
	switch {
	case paid && status:
		return q.ordersPrefix + ">", nil
	case paid:
		return q.ns.Subject(ordersync.SubjectPaid), nil
	case status:
		return q.ns.Subject(ordersync.SubjectStatusPrefix + ">"), nil
	}
	return "", fmt.Errorf("%w: no events", ordersync.ErrInvalidEndpoint)
}

// EndpointEvents creates or updates the endpoint's durable consumer.
func (q *Queue) EndpointEvents(ctx context.Context, endpointID string, events []ordersync.HookEvent, from time.Time, ackWait time.Duration) (ordersync.OrderEventSource, error) {
	if ackWait <= 0 {
		ackWait = endpointAckWait
	}
	subject, err := q.hookSubject(events)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s consumer: %w", endpointID, err)
	}
	name := q.endpointConsumer(endpointID)
	cc := jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "ordersync deliveries to endpoint " + endpointID,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxAckPending: endpointMaxAckPending,
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &from,
		FilterSubject: subject,
		MaxDeliver:    -1,
	}
	var c jetstream.Consumer
	if err := retryRace(ctx, createAttemptTimeout, func(ctx context.Context) error {
		c, err = q.js.CreateOrUpdateConsumer(ctx, q.cfg.OrdersStream, cc)
		return err
	}); err != nil {
		return nil, fmt.Errorf("create or update consumer %s: %w", name, err)
	}
	return &orderEventSource{q: q, c: c, ackWait: ackWait}, nil
}

// DeleteEndpointEvents deletes the endpoint's consumer.
func (q *Queue) DeleteEndpointEvents(ctx context.Context, endpointID string) error {
	err := q.js.DeleteConsumer(ctx, q.cfg.OrdersStream, q.endpointConsumer(endpointID))
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer of endpoint %s: %w", endpointID, err)
	}
	return nil
}

// EndpointBacklog is how many of the endpoint's events its consumer has
// not settled: those not yet handed out and those handed out and not
// acknowledged.
func (q *Queue) EndpointBacklog(ctx context.Context, endpointID string) (uint64, error) {
	c, err := q.js.Consumer(ctx, q.cfg.OrdersStream, q.endpointConsumer(endpointID))
	if err != nil {
		return 0, fmt.Errorf("consumer of endpoint %s: %w", endpointID, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("consumer of endpoint %s: info: %w", endpointID, err)
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}

// OrderEventsSince reads the stream from since through an ordered
// consumer, up to the last message when it started.
func (q *Queue) OrderEventsSince(ctx context.Context, since time.Time, events []ordersync.HookEvent, fn func(ordersync.OrderEvent) error) error {
	subject, err := q.hookSubject(events)
	if err != nil {
		return fmt.Errorf("read order events: %w", err)
	}
	stream, err := q.js.Stream(ctx, q.cfg.OrdersStream)
	if err != nil {
		return fmt.Errorf("read order events: %w", err)
	}
	last := stream.CachedInfo().State.LastSeq
	c, err := q.js.OrderedConsumer(ctx, q.cfg.OrdersStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since,
	})
	if err != nil {
		return fmt.Errorf("read order events: %w", err)
	}
	for {
		batch, err := c.Fetch(100, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return fmt.Errorf("read order events: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			md, err := msg.Metadata()
			if err != nil {
				return fmt.Errorf("read order events: %w", err)
			}
			if md.Sequence.Stream > last {
				return nil
			}
			if err := fn(q.orderEvent(msg, md)); err != nil {
				return err
			}
			if md.Sequence.Stream == last {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("read order events: %w", err)
		}
		if n == 0 {
			// Nothing more matches before the end of the stream.
			return ctx.Err()
		}
	}
}

func (q *Queue) orderEvent(msg jetstream.Msg, md *jetstream.MsgMetadata) ordersync.OrderEvent {
	ev := ordersync.OrderEvent{
		Subject: q.ns.DomainSubject(msg.Subject()),
		MsgID:   msg.Headers().Get(jetstream.MsgIDHeader),
		Payload: msg.Data(),
		From:    ordersync.Status(msg.Headers().Get(HeaderFromStatus)),

		TraceParent: msg.Headers().Get(HeaderTraceParent),
	}
	if at, err := strconv.Atoi(msg.Headers().Get(HeaderStatusChangeAt)); err == nil && at > 0 {
		ev.Account, ev.OrderCode = msg.Headers().Get(HeaderAccount), msg.Headers().Get(HeaderOrderCode)
		ev.To, ev.StatusChangeAt = ordersync.Status(msg.Headers().Get(HeaderStatus)), at
	}
	if md != nil {
		ev.PublishedAt = md.Timestamp.UTC()
	}
	return ev
}

var _ ordersync.OrderEventStream = (*Queue)(nil)
