package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestPoolEndToEnd: events for orders in several states go through the
// queue; the mirror ends equal to the simulator, every event is logged as
// synced, and the consumer holds nothing.
func TestPoolEndToEnd(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	orders := e.createOrders(t, 30)
	var codes []string
	for i, o := range orders {
		codes = append(codes, o.OrderCode)
		evs := []*ordersync.InboundEvent{e.webhook(o.OrderID, ordersync.EventCreated)}
		switch i % 3 {
		case 1:
			if _, err := e.sim.Pay(o.OrderCode, ordersync.Buyer{Name: "Ana", Email: "ana@example.com"}); err != nil {
				t.Fatalf("Pay: %v", err)
			}
			evs = append(evs, e.webhook(o.OrderID, ordersync.EventSuccessPayment))
		case 2:
			if _, err := e.sim.Cancel(o.OrderCode); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			evs = append(evs, e.webhook(o.OrderID, ordersync.EventCancelled))
		}
		e.publish(t, evs...)
	}
	var applied []ordersync.ApplyResult
	appliedCh := make(chan []ordersync.ApplyResult, 100)
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.OnApplied = func(r []ordersync.ApplyResult) { appliedCh <- append([]ordersync.ApplyResult(nil), r...) }
	})
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, codes)

	for len(appliedCh) > 0 {
		applied = append(applied, <-appliedCh...)
	}
	created := 0
	for _, r := range applied {
		if r.Created {
			created++
		}
	}
	if created != len(orders) {
		t.Errorf("OnApplied saw %d created orders, want %d", created, len(orders))
	}
	evs, err := e.db.ListEvents(context.Background(), ordersync.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if want := int(e.msgSeq.Load()); len(evs) != want {
		t.Errorf("event log has %d rows, want %d", len(evs), want)
	}
	for _, ev := range evs {
		if ev.Outcome != ordersync.OutcomeSynced || ev.OrderCode == "" {
			t.Errorf("event %s: outcome %q, code %q; want synced with a code", ev.MsgID, ev.Outcome, ev.OrderCode)
		}
	}
	if n := len(e.deadLetters(t, "")); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
	if got := counterValue(t, e.reg, "ordersync_sync_lag_seconds", nil); got != float64(e.msgSeq.Load()) {
		t.Errorf("sync lag observed %v times, want %d", got, e.msgSeq.Load())
	}
	if got := counterValue(t, e.reg, "ordersync_mirror_status_changes_total", map[string]string{"status": "PAID"}); got != 10 {
		t.Errorf("status changes to PAID = %v, want 10", got)
	}
}
