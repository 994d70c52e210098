package queue

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
)

// queuedOrderEvent is one order event fetched from an endpoint's consumer.
type queuedOrderEvent struct {
	msg jetstream.Msg
	ev  ordersync.OrderEvent
	seq uint64 // in the stream
	// src is the source that handed it out, counting it until settled.
	src     *orderEventSource
	settled atomic.Bool
}

// settle stops counting an event handed out.
func (d *queuedOrderEvent) settle() {
	if d.src != nil && d.settled.CompareAndSwap(false, true) {
		d.src.out.Add(-1)
	}
}

func (d *queuedOrderEvent) Event() ordersync.OrderEvent { return d.ev }

func (d *queuedOrderEvent) Ack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ack order event: %w", err)
	}
	if err := d.msg.Ack(); err != nil {
		return fmt.Errorf("ack order event %s: %w", d.ev.MsgID, err)
	}
	d.settle()
	return nil
}

// Release refuses the event: the server hands it out again at once, ahead
// of anything not yet handed out.
func (d *queuedOrderEvent) Release() error {
	if err := d.msg.Nak(); err != nil {
		return fmt.Errorf("release order event %s: %w", d.ev.MsgID, err)
	}
	d.settle()
	return nil
}

func (d *queuedOrderEvent) Extend() error {
	if err := d.msg.InProgress(); err != nil {
		return fmt.Errorf("extend order event %s: %w", d.ev.MsgID, err)
	}
	return nil
}
