package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
)

// EventSubject is the subject an account's events are published on.
func (q *Queue) EventSubject(account string) string { return q.eventsPrefix + account }

// PublishEvent stores a received event in the events stream and returns
// after JetStream acknowledged it (or ctx ended). duplicate reports that an
// event with the same MsgID was stored within the duplicate window.
func (q *Queue) PublishEvent(ctx context.Context, ev *ordersync.InboundEvent) (bool, error) {
	if !validToken(ev.Account) {
		return false, fmt.Errorf("publish event: account %q is not a valid subject token", ev.Account)
	}
	if ev.MsgID == "" {
		return false, errors.New("publish event: no MsgID")
	}
	// One backing array for the header values: a publish per webhook, so
	// allocations count.
	vals := make([]string, 0, 8)
	h := make(nats.Header, 8)
	set := func(key, value string) {
		vals = append(vals, value)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	set(jetstream.MsgIDHeader, ev.MsgID)
	set(jetstream.ExpectedStreamHeader, q.cfg.EventsStream)
	if !ev.ReceivedAt.IsZero() {
		set(HeaderReceivedNanos, strconv.FormatInt(ev.ReceivedAt.UnixNano(), 10))
	}
	if ev.Signature != "" {
		set(HeaderSignature, string(ev.Signature))
	}
	if ev.Ignored != "" {
		set(HeaderIgnored, string(ev.Ignored))
	}
	if ev.ReplayOf != 0 {
		set(HeaderReplayOf, strconv.FormatInt(ev.ReplayOf, 10))
	}
	if ev.Cause != "" {
		set(HeaderCause, string(ev.Cause))
	}
	if ev.Event != nil {
		if line, ok := ev.Event.Envelope(); ok {
			set(HeaderEvent, line)
		}
	}
	if ev.TraceParent != "" {
		set(HeaderTraceParent, ev.TraceParent)
	}
	msg := &nats.Msg{Subject: q.eventsPrefix + ev.Account, Header: h, Data: ev.Body}
	dup, err := q.publish(ctx, msg)
	if err != nil {
		return false, fmt.Errorf("publish event %s: %w", ev.MsgID, err)
	}
	return dup, nil
}

// PublishMessages stores outgoing order events in the orders stream, in
// order, each deduplicated by its MsgID, as ordersync.MessagePublisher
// says. It sends them all before it waits for the first ack, then waits for
// the acks in order: the outbox relay's batches cost about half the CPU per
// message this way (BenchmarkRelay), and JetStream stores the messages of
// one connection in the order they were sent. The domain's subjects
// (ordersync.SubjectPaid, …) are moved onto the configured prefix.
func (q *Queue) PublishMessages(ctx context.Context, msgs []ordersync.OutboxMessage) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	var sendErr error
	for _, m := range msgs {
		f, err := q.sendMessage(m)
		if err != nil {
			sendErr = err
			break
		}
		futures = append(futures, f)
	}
	dups := make([]bool, 0, len(futures))
	for i, f := range futures {
		ack, err := waitAck(ctx, f)
		q.metrics.orders.record(start, ack, err)
		if err != nil {
			return dups, fmt.Errorf("publish %s %s: %w", msgs[i].Subject, msgs[i].MsgID, err)
		}
		dups = append(dups, ack.Duplicate)
	}
	if sendErr != nil {
		q.metrics.orders.record(start, nil, sendErr)
		return dups, sendErr
	}
	return dups, nil
}

// sendMessage sends one outgoing order event without waiting for its ack.
func (q *Queue) sendMessage(m ordersync.OutboxMessage) (jetstream.PubAckFuture, error) {
	subj, err := q.orderSubject(m.Subject)
	if err != nil {
		return nil, err
	}
	if m.MsgID == "" {
		return nil, fmt.Errorf("publish %s: no msgID", m.Subject)
	}
	h := nats.Header{
		jetstream.MsgIDHeader:          []string{m.MsgID},
		jetstream.ExpectedStreamHeader: []string{q.cfg.OrdersStream},
	}
	if m.From != "" {
		h[HeaderFromStatus] = []string{string(m.From)}
	}
	if m.To != "" && m.StatusChangeAt > 0 {
		h[HeaderAccount] = []string{m.Account}
		h[HeaderOrderCode] = []string{m.OrderCode}
		h[HeaderStatus] = []string{string(m.To)}
		h[HeaderStatusChangeAt] = []string{strconv.Itoa(m.StatusChangeAt)}
	}
	if m.TraceParent != "" {
		h[HeaderTraceParent] = []string{m.TraceParent}
	}
	f, err := q.js.PublishMsgAsync(&nats.Msg{Subject: subj, Header: h, Data: m.Payload})
	if err != nil {
		return nil, fmt.Errorf("publish %s %s: %w", subj, m.MsgID, err)
	}
	return f, nil
}

// orderSubject maps an order subject onto the configured prefix and
// checks it.
func (q *Queue) orderSubject(subject string) (string, error) {
	subj := q.ns.Subject(subject)
	rest, ok := strings.CutPrefix(subj, q.ordersPrefix)
	if !ok || rest == "" {
		return "", fmt.Errorf("publish %s: not an order subject (want %s…)", subject, ordersync.SubjectOrdersPrefix)
	}
	for _, tok := range strings.Split(rest, ".") {
		if !validToken(tok) {
			return "", fmt.Errorf("publish %s: invalid subject", subject)
		}
	}
	return subj, nil
}

// publish sends an event and waits for its ack. It uses the asynchronous
// publisher and waits on the future: many concurrent callers then share the
// connection's one ack subscription instead of each making a request.
func (q *Queue) publish(ctx context.Context, msg *nats.Msg) (bool, error) {
	start := time.Now()
	ack, err := q.awaitAck(ctx, msg)
	q.metrics.events.record(start, ack, err)
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

func (q *Queue) awaitAck(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := q.js.PublishMsgAsync(msg)
	if err != nil {
		return nil, err
	}
	return waitAck(ctx, f)
}

// waitAck waits for a published message's ack, its failure, or ctx.
func waitAck(ctx context.Context, f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
