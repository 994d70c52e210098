package queue

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestEventParseTravels: the receiver's parse of a body travels in the
// Ordersync-Event header and comes back typed; an event queued without it
// (by an earlier release, or one the header cannot carry) comes back
// without it, for its reader to parse the body.
func TestEventParseTravels(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	src := q.Events()
	parsed := testEvent(1)
	var err error
	if parsed.Event, err = ordersync.ParseEvent(parsed.Body); err != nil {
		t.Fatal(err)
	}
	old := testEvent(2)
	unsafe := testEvent(3)
	unsafe.Event = &ordersync.Event{OrderID: "3", OrderReference: "a|b", Type: ordersync.EventCreated}
	for _, ev := range []*ordersync.InboundEvent{parsed, old, unsafe} {
		publish(t, q, ev)
	}
	waitPending(t, src, 3)
	ds := next(t, src, 10, time.Second)
	if len(ds) != 3 {
		t.Fatalf("got %d deliveries, want 3", len(ds))
	}
	got := map[string]*ordersync.Event{}
	for _, d := range ds {
		got[d.Event().MsgID] = d.Event().Event
	}
	if e := got[parsed.MsgID]; e == nil || *e != *parsed.Event {
		t.Errorf("the parsed event came back as %+v, want %+v", e, parsed.Event)
	}
	if e := got[old.MsgID]; e != nil {
		t.Errorf("an event queued without a parse came back with %+v", e)
	}
	if e := got[unsafe.MsgID]; e != nil {
		t.Errorf("an event the header cannot carry came back with %+v", e)
	}
}
