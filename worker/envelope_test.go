package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
)

// TestPoolReadsTheReceiversParse: an event that carries the receiver's
// parse is followed by it, its body not parsed again (here the body is not
// JSON at all, which a parse would dead-letter as malformed); an event
// queued without one, as earlier releases queued every event, is parsed
// and followed as before.
func TestPoolReadsTheReceiversParse(t *testing.T) {
	e := newPoolEnv(t, sim.Faults{})
	orders := e.createOrders(t, 2)
	carried := e.webhook(orders[0].OrderID, ordersync.EventCreated)
	carried.Event = &ordersync.Event{OrderID: orders[0].OrderID, OrderType: ordersync.OrderTypePaymentLink, Type: ordersync.EventCreated}
	carried.Body = []byte("not parsed again")
	old := e.webhook(orders[1].OrderID, ordersync.EventCreated)
	e.publish(t, carried, old)
	e.startPool(t, e.newSyncer(t, nil, nil), nil)
	e.waitDrained(t, 20*time.Second)

	if dls := e.deadLetters(t, ordersync.ReasonMalformed); len(dls) != 0 {
		t.Fatalf("dead-lettered as malformed: %+v", dls)
	}
	e.assertMirrorMatchesSim(t, []string{orders[0].OrderCode, orders[1].OrderCode})
	for _, o := range orders {
		if _, err := e.mirror.FindOrderByCode(context.Background(), ordersync.DefaultAccount, o.OrderCode); err != nil {
			t.Errorf("order %s: %v", o.OrderCode, err)
		}
	}
}
