package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
)

// handBackMargin is added to the ack wait before a new reader of an
// endpoint's consumer starts: the earlier reader's last extension may reach
// the server a little after it stopped, and the server's timer notices an
// expired ack wait a little after it ran out.
const handBackMargin = time.Second

type orderEventSource struct {
	q *Queue
	c jetstream.Consumer
	// ackWait is the consumer's.
	ackWait time.Duration
	// early is what Resume took back, with what came meanwhile, in stream
	// order, or what came after events lost on the way: the next calls
	// of Next return it, max at a time, once nothing earlier is elsewhere.
	early []ordersync.QueuedOrderEvent
	// holdUntil bounds how long early waits for what is elsewhere; zero
	// when nothing is awaited. extended is when early was last extended.
	holdUntil, extended time.Time
	// nextConsumerSeq is the consumer sequence the next event sent should
	// carry (0: not known). This reader is the consumer's only one, so a
	// later one means events sent were lost on the way: a pull the client stopped
	// listening to just as the server answered it. They come back only
	// after their ack wait, and until then what came after them is held.
	nextConsumerSeq uint64
	// out counts the events Next returned and that are not settled.
	out atomic.Int64
}

// Resume fetches until every event the consumer counts as handed out and
// not settled is one this reader holds: the server queues an event for
// redelivery once its ack wait ran out (or it was refused), and serves that
// queue before any event not yet handed out, so what arrives before them is
// later and is held with them. It compares counts rather than counting
// redeliveries, because a later event can be redelivered too (one that an
// earlier reader's last pull took and refused as it stopped) and must not
// stand in for the earlier event still held elsewhere. An earlier reader
// that stopped by stoppedBy leaves nothing pending past its ack wait from
// then, which bounds the wait; a consumer it cannot read costs that whole
// wait. One that stopped in this process released what it held, which is
// back at once. When ctx ends, what was taken back is released again.
func (s *orderEventSource) Resume(ctx context.Context, stoppedBy time.Time) error {
	until := stoppedBy.Add(s.ackWait + handBackMargin)
	info, err := s.c.Info(ctx)
	switch {
	case err == nil && info.NumAckPending == 0:
		s.nextConsumerSeq = info.Delivered.Consumer + 1
		return nil
	case err != nil:
		// Without the count, wait out the bound and take nothing early.
		if err := sleepUntil(ctx, until); err != nil {
			return fmt.Errorf("resume order events: %w", err)
		}
		return nil
	}
	s.nextConsumerSeq = info.Delivered.Consumer + 1
	s.hold(until)
	for !s.holdUntil.IsZero() {
		if err := s.takeBack(ctx, time.Second); err != nil {
			return fmt.Errorf("resume order events: %w", err)
		}
	}
	return nil
}

// hold makes early wait, until at most until, for what is elsewhere.
func (s *orderEventSource) hold(until time.Time) {
	if s.holdUntil.IsZero() {
		s.extended = time.Now()
	}
	if until.After(s.holdUntil) {
		s.holdUntil = until
	}
}

// takeBack is one round of waiting for what is elsewhere: it fetches for
// up to wait into early and ends the hold once the consumer counts nothing
// unsettled beyond what this reader holds and has handed out, or once its
// bound has passed. When ctx ends it releases early.
func (s *orderEventSource) takeBack(ctx context.Context, wait time.Duration) error {
	if !time.Now().Before(s.holdUntil) {
		s.endHold()
		return nil
	}
	ds, err := s.next(ctx, endpointMaxAckPending, min(time.Until(s.holdUntil), wait))
	s.early = append(s.early, ds...)
	if ctx.Err() != nil {
		s.release()
		return ctx.Err()
	}
	// What is held must not run out its own ack wait meanwhile.
	if time.Since(s.extended) >= s.ackWait/3 {
		s.extended = time.Now()
		for _, d := range s.early {
			_ = d.Extend()
		}
	}
	if err != nil && len(ds) == 0 {
		if err := sleepUntil(ctx, time.Now().Add(min(time.Until(s.holdUntil), wait))); err != nil {
			s.release()
			return err
		}
	}
	// What this reader holds or handed out is counted as unsettled too:
	// the rest is elsewhere. An ack on its way may still be counted, which
	// only waits a round longer.
	if info, err := s.c.Info(ctx); err == nil && info.NumAckPending <= int(s.out.Load())+len(s.early) {
		s.endHold()
	}
	return nil
}

func (s *orderEventSource) endHold() {
	s.holdUntil = time.Time{}
	sortBySequence(s.early)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Next asks for what is there now and, when nothing is, waits for one
// event and takes what else arrived with it (see eventSource.Next). A
// batch is sorted by stream sequence: redeliveries come in the order their
// ack waits ran out, which need not be the order published. After an
// event lost on the way (see received), it holds what came after it as
// Resume does, coming back within a second with nothing meanwhile.
//
// Once ctx has ended nothing is returned: a pull that ctx cut short may
// still have brought events, and a reader that stops would leave them
// unsettled, for the next reader's Resume to wait out the ack wait. They
// are released instead, with what Resume took back and Next has not yet
// returned.
func (s *orderEventSource) Next(ctx context.Context, max int, wait time.Duration) ([]ordersync.QueuedOrderEvent, error) {
	if max < 1 {
		return nil, fmt.Errorf("next order events: max %d must be at least 1", max)
	}
	if err := ctx.Err(); err != nil {
		s.release()
		return nil, fmt.Errorf("next order events: %w", err)
	}
	if !s.holdUntil.IsZero() {
		// The caller comes back within a second while it holds events,
		// to extend them: so does this wait.
		if err := s.takeBack(ctx, min(wait, time.Second)); err != nil {
			return nil, fmt.Errorf("next order events: %w", err)
		}
		if !s.holdUntil.IsZero() {
			return nil, nil
		}
	}
	if len(s.early) > 0 {
		n := min(max, len(s.early))
		out := s.early[:n:n]
		s.early = s.early[n:]
		return s.handOut(out), nil
	}
	out, err := s.next(ctx, max, wait)
	if ctx.Err() != nil {
		s.early = append(s.early, out...)
		s.release()
		return nil, fmt.Errorf("next order events: %w", ctx.Err())
	}
	if !s.holdUntil.IsZero() {
		// An event sent before these was lost on the way.
		s.early = append(s.early, out...)
		return nil, nil
	}
	sortBySequence(out)
	return s.handOut(out), err
}

// handOut counts what Next returns as out until settled.
func (s *orderEventSource) handOut(ds []ordersync.QueuedOrderEvent) []ordersync.QueuedOrderEvent {
	for _, d := range ds {
		d.(*queuedOrderEvent).src = s
	}
	s.out.Add(int64(len(ds)))
	return ds
}

// release hands back what the source holds and has not returned.
func (s *orderEventSource) release() {
	for _, d := range s.early {
		_ = d.Release()
	}
	s.early = nil
}

func (s *orderEventSource) next(ctx context.Context, max int, wait time.Duration) ([]ordersync.QueuedOrderEvent, error) {
	out, err := s.collect(ctx, nil, func() (jetstream.MessageBatch, error) { return s.c.FetchNoWait(max) })
	if len(out) > 0 || wait <= 0 {
		return out, orderFetchError(ctx, out, err)
	}
	pull, cancel := newPullContext(ctx, wait)
	defer cancel()
	out, err = s.collect(ctx, out, func() (jetstream.MessageBatch, error) {
		return s.c.Fetch(1, append(pullBeats(time.Until(pull.deadline)), jetstream.FetchContext(pull))...)
	})
	if ctx.Err() != nil {
		s.awaitWithdrawn()
	}
	if len(out) == 0 {
		return nil, orderFetchError(ctx, out, err)
	}
	if max > 1 {
		out, _ = s.collect(ctx, out, func() (jetstream.MessageBatch, error) { return s.c.FetchNoWait(max - 1) })
	}
	return out, nil
}

// pullGrace is how long a pull made by next is listened to after the
// server was asked to end it: long enough for the server's last event and
// its end to reach a client on a busy machine.
const pullGrace = time.Second

// pullContext is the context of next's long poll. FetchContext asks the
// server to end the pull a little before the context's deadline (a tenth
// of the wait, at most a second) and stops listening at the deadline. So
// its Deadline is the wait, from which the server's end is computed, while
// it is done pullGrace later, or as soon as the reader's context is: the
// server's end of the pull, which ends the fetch, comes in time however
// late the client reads it, and a reader that stops still withdraws its
// pull at once. With only the tenth of a second to spare, an event sent
// just before a one-second pull's end (the one made every second while
// events are held) reached a client on a busy machine after it had
// stopped listening, stayed unsettled and held the endpoint's later events
// for the ack wait (TestShortPollKeepsALateEvent).
type pullContext struct {
	context.Context
	deadline time.Time
}

func newPullContext(ctx context.Context, wait time.Duration) (pullContext, context.CancelFunc) {
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		// The reader's own deadline comes first: listened to until then.
		deadline = d
	}
	listen, cancel := context.WithTimeout(ctx, wait+pullGrace)
	return pullContext{Context: listen, deadline: deadline}, cancel
}

func (c pullContext) Deadline() (time.Time, bool) { return c.deadline, true }

// collect runs one fetch and appends its messages to out. The wait of
// next is a long poll made with ctx, unlike the pool's (waitForOne): when
// ctx ends the fetch stops listening, and the server, finding no one
// listening, drops the pull. Left open until it expired, a stopped
// reader's pull took the next event and refused it, and a new reader
// already pulling delivered that order's later events first. collect
// returns only once the pull is over, refusing what it still brought, so a
// reader that stopped reads no more. An event the server sent just as the
// pull was dropped is left unsettled: the next reader's Resume waits for it
// (at most the ack wait), which keeps the order.
func (s *orderEventSource) collect(ctx context.Context, out []ordersync.QueuedOrderEvent, fetch func() (jetstream.MessageBatch, error)) ([]ordersync.QueuedOrderEvent, error) {
	s.q.metrics.pulls.orders.Inc()
	batch, err := fetch()
	if err != nil {
		return out, err
	}
	msgs := batch.Messages()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return out, batch.Error()
			}
			md, _ := msg.Metadata()
			d := &queuedOrderEvent{msg: msg, ev: s.q.orderEvent(msg, md)}
			if md != nil {
				d.seq = md.Sequence.Stream
				s.received(md.Sequence.Consumer)
			}
			out = append(out, d)
		case <-ctx.Done():
			for msg := range msgs {
				_ = msg.Nak()
			}
			return out, ctx.Err()
		}
	}
}

// received notes a received event's consumer sequence. One past the next
// expected means events sent were lost on the way: what comes from here on
// is held until they are back, at most their ack wait from now.
func (s *orderEventSource) received(seq uint64) {
	if s.nextConsumerSeq != 0 && seq > s.nextConsumerSeq {
		s.q.metrics.lost.Add(float64(seq - s.nextConsumerSeq))
		s.q.logger.Warn("deliveries: events sent by the queue were lost on the way; the later ones wait until they are back, within the ack wait",
			"consumer", s.c.CachedInfo().Name, "lost", seq-s.nextConsumerSeq, "ack_wait", s.ackWait)
		s.hold(time.Now().Add(s.ackWait + handBackMargin))
	}
	s.nextConsumerSeq = seq + 1
}

// withdrawBound bounds awaitWithdrawn: another process's pull (a takeover)
// counts as waiting too.
const withdrawBound = time.Second

// awaitWithdrawn waits until the server holds no pull of the consumer
// open. The fetch stops listening at once when its context ends, but the
// server drops the pull only when it next looks for someone listening
// (consumer info makes it look), and until then hands it the next event,
// which nobody takes: an event released then, or one published, would
// wait out the ack wait.
func (s *orderEventSource) awaitWithdrawn() {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawBound)
	defer cancel()
	for {
		info, err := s.c.Info(ctx)
		if err != nil || info.NumWaiting == 0 {
			return
		}
		if sleepUntil(ctx, time.Now().Add(5*time.Millisecond)) != nil {
			return
		}
	}
}

func orderFetchError(ctx context.Context, out []ordersync.QueuedOrderEvent, err error) error {
	switch {
	case err == nil, len(out) > 0:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("next order events: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, jetstream.ErrNoHeartbeat):
		// A lost pull (no heartbeat) is asked again at once, as in
		// eventSource.fetchError.
		return nil
	}
	return fmt.Errorf("next order events: fetch: %w", err)
}

func sortBySequence(out []ordersync.QueuedOrderEvent) {
	slices.SortStableFunc(out, func(a, b ordersync.QueuedOrderEvent) int {
		return cmp.Compare(a.(*queuedOrderEvent).seq, b.(*queuedOrderEvent).seq)
	})
}
