// The pool's ways to fail: events it cannot resolve, permanent failures,
// events it ignores, and an upstream outage.

package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestPoolUnresolved: an event for an order the mirror never learns is
// dead-lettered "unresolved" after the retry schedule; one whose order is
// recorded during the schedule syncs.
func TestPoolUnresolved(t *testing.T) {
	t.Parallel()
	e := newPoolEnv(t, sim.Faults{})
	amount := ordersync.MustAmount("12.00")
	late, err := e.sim.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount})
	if err != nil {
		t.Fatalf("CreatePaymentLink: %v", err)
	}
	e.publish(t, e.webhook("990001", ordersync.EventCreated), e.webhook(late.OrderID, ordersync.EventCreated))
	delays := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}
	missed := &missSignal{DB: e.mirror, id: late.OrderID, missed: make(chan struct{})}
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) { c.UnresolvedRetryDelays, c.Mirror = delays, missed })

	select { // the first try of the late order has failed
	case <-missed.missed:
	case <-time.After(10 * time.Second):
		t.Fatal("the pool never looked the late order up")
	}
	if err := e.mirror.RecordOrderRef(context.Background(), ordersync.OrderRef{
		Account: ordersync.DefaultAccount, Code: late.OrderCode, ID: late.OrderID,
	}); err != nil {
		t.Fatalf("RecordOrderRef: %v", err)
	}
	e.waitDrained(t, 10*time.Second)

	e.assertMirrorMatchesSim(t, []string{late.OrderCode})
	dls := e.deadLetters(t, ordersync.ReasonUnresolved)
	if len(dls) != 1 {
		t.Fatalf("%d unresolved dead letters, want 1", len(dls))
	}
	if dl := dls[0]; dl.OrderID != "990001" || dl.Attempts != len(delays)+1 || len(dl.Body) == 0 {
		t.Errorf("dead letter %+v: want order 990001 after %d attempts, with its body", dl, len(delays)+1)
	}
	if n := len(e.deadLetters(t, "")); n != 1 {
		t.Errorf("%d dead letters in all, want 1", n)
	}
}

// missSignal is the mirror, closing missed once a lookup of id's order
// code found nothing.
type missSignal struct {
	DB
	id     ordersync.ID
	once   sync.Once
	missed chan struct{}
}

func (m *missSignal) ResolveOrderCode(ctx context.Context, ref ordersync.OrderRef) (string, error) {
	code, err := m.DB.ResolveOrderCode(ctx, ref)
	if ref.ID == m.id && errors.Is(err, ordersync.ErrNotFound) {
		m.once.Do(func() { close(m.missed) })
	}
	return code, err
}

// TestPoolDeadLetters: permanent failures end as dead letters with their
// reason, the event terminated and logged as dead-lettered.
func TestPoolDeadLetters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		ref    *ordersync.OrderRef // recorded first
		reason ordersync.DeadLetterReason
	}{
		{"unknown order code", `{"orderId":"990002","orderType":"FASTLINK_CHARGE","type":"Created"}`,
			&ordersync.OrderRef{Account: ordersync.DefaultAccount, ID: "990002", Code: "Zz9Zz9Z"}, ordersync.ReasonUnknownOrder},
		{"carried code unknown upstream", `{"orderCode":"Qq1Qq1Q","type":"Updated"}`, nil, ordersync.ReasonUnknownOrder},
		{"not json", `orderId=5`, nil, ordersync.ReasonMalformed},
		{"json array", `[{"orderId":"5"}]`, nil, ordersync.ReasonMalformed},
		{"orderId of the wrong type", `{"orderId":{"n":5},"type":"Created"}`, nil, ordersync.ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPoolEnv(t, sim.Faults{})
			if tt.ref != nil {
				if err := e.mirror.RecordOrderRef(context.Background(), *tt.ref); err != nil {
					t.Fatalf("RecordOrderRef: %v", err)
				}
			}
			ev := e.event([]byte(tt.body))
			e.publish(t, ev)
			e.startPool(t, e.newSyncer(t, nil, nil), nil)
			e.waitDrained(t, 10*time.Second)

			dls := e.deadLetters(t, "")
			if len(dls) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dls))
			}
			if dl := dls[0]; dl.Reason != tt.reason || dl.MsgID != ev.MsgID || string(dl.Body) != tt.body || dl.LastError == "" {
				t.Errorf("dead letter %+v, want reason %s for %s with the body and the error", dl, tt.reason, ev.MsgID)
			}
			if v := counterValue(t, e.reg, "ordersync_deadletters_total", map[string]string{"reason": string(tt.reason)}); v != 1 {
				t.Errorf("deadletters_total{reason=%s} = %v, want 1", tt.reason, v)
			}
			if gets := e.sim.Stats().Gets; tt.reason == ordersync.ReasonUnknownOrder && gets != 1 {
				t.Errorf("%d fetches of an unknown order, want 1", gets)
			}
		})
	}
}

// TestPoolIgnoredEvents: other products and subscriptions are logged as
// ignored and acknowledged without a fetch.
func TestPoolIgnoredEvents(t *testing.T) {
	e := newPoolEnv(t, sim.Faults{})
	// The receiver decides which events are ignored and says so in the
	// event; the pool follows that verdict and does not decide again, so
	// an event the receiver flagged is ignored whatever its body says.
	coupon := e.event(readFixture(t, "webhook-other-product-coupon-app.json"))
	coupon.Ignored = ordersync.IgnoreOtherProduct
	sub := e.event([]byte(`{"subscriptionId":"77","type":"SubscriptionPayment","orderType":"FASTLINK_CHARGE"}`))
	sub.Ignored = ordersync.IgnoreSubscription
	flagged := e.event([]byte(`{"orderId":"31999","type":"Created"}`))
	flagged.Ignored = ordersync.IgnoreOtherProduct
	e.publish(t, coupon, sub, flagged)
	e.startPool(t, e.newSyncer(t, nil, nil), nil)
	e.waitDrained(t, 10*time.Second)

	evs, err := e.mirror.ListEvents(context.Background(), ordersync.EventFilter{Limit: 10})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if len(evs) != 3 {
		t.Fatalf("event log has %d rows, want 3", len(evs))
	}
	for _, ev := range evs {
		if ev.Outcome != ordersync.OutcomeIgnored || ev.Detail == "" {
			t.Errorf("event %s: outcome %q detail %q, want ignored with the reason", ev.MsgID, ev.Outcome, ev.Detail)
		}
	}
	if gets := e.sim.Stats().Gets; gets != 0 {
		t.Errorf("%d fetches for ignored events, want 0", gets)
	}
	if n := len(e.deadLetters(t, "")); n != 0 {
		t.Errorf("%d dead letters, want 0", n)
	}
}

// TestPoolBreakerOutage: while every fetch fails with 5xx the breaker
// opens, nothing is dead-lettered, and once the service recovers the
// redelivered events sync.
func TestPoolBreakerOutage(t *testing.T) {
	t.Parallel()
	e := newPoolEnv(t, sim.Faults{ServerErrorRate: 1})
	orders := e.createOrders(t, 10)
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
		e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	}
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Breaker = worker.BreakerConfig{ConsecutiveFailures: 5, OpenFor: 150 * time.Millisecond}
	})
	// Few attempts, so that refusals counted as attempts would
	// dead-letter within the outage below.
	const maxAttempts = 4
	e.startPool(t, s, func(c *worker.PoolConfig) { c.MaxAttempts = maxAttempts })

	refused := func() float64 {
		return counterValue(t, e.reg, "ordersync_fetch_requests_total", map[string]string{"outcome": "breaker_open"})
	}
	waitFor(t, 5*time.Second, "breaker open", func() bool {
		return counterValue(t, e.reg, "ordersync_upstream_breaker_open", nil) == 1 && refused() > 0
	})
	// The outage lasts until the open breaker has refused every event
	// more than its attempts on average (or one is dead-lettered, which
	// fails below).
	atOpen := refused()
	waitFor(t, 10*time.Second, "refusals past the attempts", func() bool {
		return refused()-atOpen >= float64(maxAttempts*len(orders)) || len(e.deadLetters(t, "")) > 0
	})
	if n := len(e.deadLetters(t, "")); n != 0 {
		t.Fatalf("%d dead letters during an outage, want none", n)
	}
	if err := e.sim.SetFaults(sim.Faults{}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, codes)
	if n := len(e.deadLetters(t, "")); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
	if !s.BreakerClosed() {
		t.Error("breaker still open after recovery")
	}
	if v := counterValue(t, e.reg, "ordersync_upstream_breaker_open", nil); v != 0 {
		t.Errorf("breaker gauge = %v after recovery, want 0", v)
	}
}
