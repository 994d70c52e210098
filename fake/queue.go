package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Queue is the events stream and its worker consumer in memory, for the
// tests of the pool's logic that are not about JetStream: events are handed
// out in the order published, a MsgID is stored once, Retry hands an event
// out again after its delay with the next attempt, Ack and Term drop it.
// An event handed out and never settled stays out: the fake has no ack
// wait, so a test settles what it takes.
type Queue struct {
	mu     sync.Mutex
	seen   map[string]bool
	events []*queued // not settled, in the order published
	// wake is closed and replaced whenever an event becomes ready.
	wake chan struct{}
}

type queued struct {
	ev        ordersync.InboundEvent
	attempts  int       // times handed out
	out       bool      // handed out and not settled
	readyAt   time.Time // when a retried event may be handed out again
	delivered bool      // handed out at least once (Pending counts the others)
}

var (
	_ ordersync.EventPublisher = (*Queue)(nil)
	_ ordersync.EventSource    = (*Queue)(nil)
)

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	return &Queue{seen: map[string]bool{}, wake: make(chan struct{})}
}

// PublishEvent stores ev unless an event with its MsgID was stored before.
func (q *Queue) PublishEvent(ctx context.Context, ev *ordersync.InboundEvent) (bool, error) {
	switch {
	case ev.Account == "":
		return false, fmt.Errorf("publish event: account %q is not a valid subject token", ev.Account)
	case ev.MsgID == "":
		return false, errors.New("publish event: no MsgID")
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("publish event %s: %w", ev.MsgID, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seen[ev.MsgID] {
		return true, nil
	}
	q.seen[ev.MsgID] = true
	c := *ev
	c.Body = slices.Clone(ev.Body)
	if !c.ReceivedAt.IsZero() {
		c.ReceivedAt = time.Unix(0, c.ReceivedAt.UnixNano()).UTC()
	}
	q.events = append(q.events, &queued{ev: c})
	q.signalLocked()
	return false, nil
}

func (q *Queue) signalLocked() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// Next returns up to max ready events as soon as one is ready, waiting up
// to wait; an empty slice when none became ready in time.
func (q *Queue) Next(ctx context.Context, max int, wait time.Duration) ([]ordersync.QueuedEvent, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		q.mu.Lock()
		out, retryAt := q.takeLocked(max, time.Now())
		wake := q.wake
		q.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		var retry <-chan time.Time
		if !retryAt.IsZero() {
			t := time.NewTimer(time.Until(retryAt))
			defer t.Stop()
			retry = t.C
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("next events: %w", ctx.Err())
		case <-deadline.C:
			return []ordersync.QueuedEvent{}, nil
		case <-wake:
		case <-retry:
		}
	}
}

// takeLocked hands out up to max ready events and says when the next
// retried one becomes ready.
func (q *Queue) takeLocked(max int, now time.Time) ([]ordersync.QueuedEvent, time.Time) {
	var out []ordersync.QueuedEvent
	var next time.Time
	for _, e := range q.events {
		switch {
		case len(out) == max:
			return out, next
		case e.out:
			continue
		case e.readyAt.After(now):
			if next.IsZero() || e.readyAt.Before(next) {
				next = e.readyAt
			}
			continue
		}
		e.out, e.delivered = true, true
		e.attempts++
		ev := e.ev
		out = append(out, &queuedEvent{q: q, e: e, ev: &ev, attempt: e.attempts})
	}
	return out, next
}

// Pending is the number of events never handed out.
func (q *Queue) Pending(context.Context) (uint64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n uint64
	for _, e := range q.events {
		if !e.delivered {
			n++
		}
	}
	return n, nil
}

// Unsettled is the number of events published and not yet acked or
// terminated.
func (q *Queue) Unsettled() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.events)
}

type queuedEvent struct {
	q       *Queue
	e       *queued
	ev      *ordersync.InboundEvent
	attempt int
}

func (d *queuedEvent) Event() *ordersync.InboundEvent { return d.ev }
func (d *queuedEvent) Attempt() int                   { return d.attempt }
func (d *queuedEvent) Extend() error                  { return nil }

func (d *queuedEvent) Ack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ack event: %w", err)
	}
	d.drop()
	return nil
}

func (d *queuedEvent) Term() error {
	d.drop()
	return nil
}

func (d *queuedEvent) drop() {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	d.q.events = slices.DeleteFunc(d.q.events, func(e *queued) bool { return e == d.e })
}

func (d *queuedEvent) Retry(delay time.Duration) error {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	if !d.e.out {
		return nil
	}
	d.e.out, d.e.readyAt = false, time.Now().Add(delay)
	d.q.signalLocked()
	return nil
}
