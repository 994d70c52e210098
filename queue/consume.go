package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
)

// Events returns the source workers pull events from: the durable consumer
// shared by every worker goroutine and process.
func (q *Queue) Events() ordersync.EventSource {
	return &eventSource{q: q}
}

type eventSource struct{ q *Queue }

// Next pulls events with Fetch requests. A plain Fetch of max events waits
// until max arrived or the wait ended, so an idle worker would see a lone
// event only at the end of its wait. Next therefore asks first for what is
// there now (FetchNoWait: under load this is the only request per batch),
// and when nothing is, waits for one event and then takes whatever else
// arrived meanwhile, up to max. A wait of zero or less takes only what is
// there now. The wait is a long poll (see waitForOne): it ends the moment
// an event arrives, so a long one adds no latency, and an idle worker sends
// one request per wait.
//
// When ctx ends it returns what already arrived (which the caller must
// settle), or ctx's error when nothing did; events the abandoned pull still
// brings are handed back to the queue (or, if the connection closes first,
// redelivered after AckWait).
func (s *eventSource) Next(ctx context.Context, max int, wait time.Duration) ([]ordersync.QueuedEvent, error) {
	if max < 1 {
		return nil, fmt.Errorf("next events: max %d must be at least 1", max)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("next events: %w", err)
	}
	out, err := s.collect(ctx, nil, func() (jetstream.MessageBatch, error) { return s.q.consumer.FetchNoWait(max) })
	if len(out) > 0 || wait <= 0 {
		return out, s.fetchError(ctx, out, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline))
		if wait <= 0 {
			return nil, nil
		}
	}
	out, err = s.collect(ctx, out, func() (jetstream.MessageBatch, error) { return waitForOne(s.q.consumer, wait) })
	if len(out) == 0 {
		return nil, s.fetchError(ctx, out, err)
	}
	if max > 1 {
		// Best effort: an error here leaves the rest for the next call.
		out, _ = s.collect(ctx, out, func() (jetstream.MessageBatch, error) { return s.q.consumer.FetchNoWait(max - 1) })
	}
	return out, nil
}

// waitForOne is the long poll: a pull for one event that the server holds
// open for wait and answers the moment one arrives. The server ends the
// pull when wait is over, and the fetch listens until it has: a pull the
// client gave up on first (as FetchContext does) may still take an event,
// which then comes back only after AckWait. The server beats while it
// holds the pull (pullBeats), so a pull it lost ends within two beats.
func waitForOne(c jetstream.Consumer, wait time.Duration) (jetstream.MessageBatch, error) {
	return c.Fetch(1, append(pullBeats(wait), jetstream.FetchMaxWait(wait))...)
}

// pullHeartbeat is how often the server says it still holds a long poll.
// A pull it dropped without a word (the embedded JetStream reloaded after a
// full disk, a consumer's leader moved, a reconnection) ends after two
// missed beats and the next pull is sent, instead of events waiting out
// the rest of the poll. An idle process pays one small message a second.
const pullHeartbeat = time.Second

// pullBeats asks for pullHeartbeat on a pull of wait, where wait is long
// enough: the client wants the pull's expiry at least two beats, and
// FetchContext sets the expiry up to a tenth short of the wait. A shorter
// pull ends on its own about as soon.
func pullBeats(wait time.Duration) []jetstream.FetchOpt {
	if wait < 3*pullHeartbeat {
		return nil
	}
	return []jetstream.FetchOpt{jetstream.FetchHeartbeat(pullHeartbeat)}
}

// collect runs one fetch, appends its messages to out and returns its
// error. It stops waiting when ctx ends (FetchNoWait takes no context); what
// the pull brings after that goes back to the queue.
func (s *eventSource) collect(ctx context.Context, out []ordersync.QueuedEvent, fetch func() (jetstream.MessageBatch, error)) ([]ordersync.QueuedEvent, error) {
	s.q.metrics.pulls.events.Inc()
	batch, err := fetch()
	if err != nil {
		return out, err
	}
	n := len(out)
	defer func() { s.q.metrics.delivered.Add(float64(len(out) - n)) }()
	msgs := batch.Messages()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return out, batch.Error()
			}
			out = append(out, &queuedEvent{msg: msg, q: s.q})
		case <-ctx.Done():
			// The server may still send events to this pull until it
			// expires: hand them back at once rather than leave them
			// waiting out AckWait.
			go func() {
				for msg := range msgs {
					_ = msg.Nak()
				}
			}()
			return out, ctx.Err()
		}
	}
}

// fetchError decides what a failed or empty fetch means to the caller:
// nothing in time is not an error, and events in hand are returned first.
func (s *eventSource) fetchError(ctx context.Context, out []ordersync.QueuedEvent, err error) error {
	switch {
	case err == nil, len(out) > 0:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("next events: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, nats.ErrTimeout):
		return nil
	}
	s.q.metrics.fetchErrors.Inc()
	if errors.Is(err, jetstream.ErrNoHeartbeat) {
		// The pull was lost; the next one finds out whether the
		// connection is. Waiting first would only add to the gap.
		return nil
	}
	return fmt.Errorf("next events: fetch: %w", err)
}

// Pending is the number of events the consumer has not delivered yet.
func (s *eventSource) Pending(ctx context.Context) (uint64, error) {
	info, err := s.q.consumer.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("pending events: consumer info: %w", err)
	}
	return info.NumPending, nil
}

// queuedEvent is one fetched event.
type queuedEvent struct {
	msg  jetstream.Msg
	q    *Queue
	once sync.Once
	ev   *ordersync.InboundEvent
}

// Event decodes the headers the receiver wrote. A header that does not
// parse is left zero rather than failing the event: the body is what
// matters and it is always there. The account is the subject's last token,
// which PublishEvent checked and every release has written: it is never
// empty, so nothing downstream defaults it.
func (d *queuedEvent) Event() *ordersync.InboundEvent {
	d.once.Do(func() {
		h := d.msg.Headers()
		ev := &ordersync.InboundEvent{
			MsgID:     h.Get(jetstream.MsgIDHeader),
			Account:   strings.TrimPrefix(d.msg.Subject(), d.q.eventsPrefix),
			Body:      d.msg.Data(),
			Signature: ordersync.SignatureVerdict(h.Get(HeaderSignature)),
			Ignored:   ordersync.IgnoreReason(h.Get(HeaderIgnored)),
			Cause:     ordersync.Cause(h.Get(HeaderCause)),

			TraceParent: h.Get(HeaderTraceParent),
		}
		ev.ReceivedAt = receivedAt(h)
		if ev.ReceivedAt.IsZero() {
			// The stream's own time of the message: like the receiver's,
			// the same on every redelivery, which the event log's key needs.
			if md, err := d.msg.Metadata(); err == nil {
				ev.ReceivedAt = md.Timestamp.UTC()
			}
		}
		if n, err := strconv.ParseInt(h.Get(HeaderReplayOf), 10, 64); err == nil {
			ev.ReplayOf = n
		}
		if line := h.Get(HeaderEvent); line != "" {
			ev.Event, _ = ordersync.ParseEnvelope(line)
		}
		d.ev = ev
	})
	return d.ev
}

// receivedAt reads the receipt time: Unix nanoseconds, or, from an event
// an earlier release queued, RFC 3339 text. Zero when neither parses.
func receivedAt(h nats.Header) time.Time {
	if v := h.Get(HeaderReceivedNanos); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(0, n).UTC()
		}
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, h.Get(HeaderReceivedAt))
	return t
}

func (d *queuedEvent) Attempt() int {
	md, err := d.msg.Metadata()
	if err != nil {
		return 1
	}
	return int(md.NumDelivered)
}

// Ack is fire-and-forget: if the ack is lost the event is redelivered after
// AckWait, and processing it again is idempotent.
func (d *queuedEvent) Ack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ack event: %w", err)
	}
	if err := d.msg.Ack(); err != nil {
		return fmt.Errorf("ack event: %w", err)
	}
	d.q.metrics.settled.ack.Inc()
	return nil
}

func (d *queuedEvent) Retry(delay time.Duration) error {
	if err := d.msg.NakWithDelay(delay); err != nil {
		return fmt.Errorf("retry event: %w", err)
	}
	d.q.metrics.settled.retry.Inc()
	return nil
}

func (d *queuedEvent) Extend() error {
	if err := d.msg.InProgress(); err != nil {
		return fmt.Errorf("extend event: %w", err)
	}
	return nil
}

func (d *queuedEvent) Term() error {
	if err := d.msg.Term(); err != nil {
		return fmt.Errorf("terminate event: %w", err)
	}
	d.q.metrics.settled.term.Inc()
	return nil
}
