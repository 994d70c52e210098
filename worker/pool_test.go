package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
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

// TestPoolCoalescesBursts: ten events for each of 50 orders, interleaved,
// cost at most two fetches per order.
func TestPoolCoalescesBursts(t *testing.T) {
	const perOrder = 10
	e := newEnv(t, sim.Faults{GetLatency: 50 * time.Millisecond})
	orders := e.createOrders(t, 50)
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
	}
	for range perOrder {
		for _, o := range orders {
			e.publish(t, e.webhook(o.OrderID, ordersync.EventUpdated))
		}
	}
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.FetchConcurrency = 64
		c.BatchSize = len(orders) * perOrder
	})
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, codes)

	stats := e.sim.Stats()
	for _, code := range codes {
		if n := stats.GetsByOrder[code]; n < 1 || n > 2 {
			t.Errorf("order %s fetched %d times for %d events, want 1 or 2", code, n, perOrder)
		}
	}
	coalesced := counterValue(t, e.reg, "ordersync_worker_events_coalesced_total", nil)
	if want := float64(len(orders)*perOrder) - float64(stats.Gets); coalesced != want {
		t.Errorf("coalesced = %v, want %v (events minus fetches)", coalesced, want)
	}
	evs, err := e.db.ListEvents(context.Background(), ordersync.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if len(evs) != len(orders)*perOrder {
		t.Errorf("event log has %d rows, want %d: coalesced events are logged too", len(evs), len(orders)*perOrder)
	}
}

// TestPoolRoundTakesEventsWhileRateLimited: a webhook that arrives while
// its order's fetch waits at the rate limit is answered by that fetch, whose
// request has not left yet, instead of costing a request of its own.
func TestPoolRoundTakesEventsWhileRateLimited(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	orders := e.createOrders(t, 2)
	first, waiting := orders[0], orders[1]
	// One request every 2 s, no burst beyond the first: once first's request
	// has taken the token, waiting's fetch is held at the limiter for about
	// 2 s, the window in which its second webhook arrives.
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.RequestsPerSecond, c.Burst = 0.5, 1 })
	e.startPool(t, s, nil)

	e.publish(t, e.webhook(first.OrderID, ordersync.EventCreated))
	waitFor(t, 5*time.Second, "the first order's request", func() bool {
		return e.sim.Stats().GetsByOrder[first.OrderCode] == 1
	})
	e.publish(t, e.webhook(waiting.OrderID, ordersync.EventCreated))
	waitFor(t, 5*time.Second, "a fetch held at the rate limit", func() bool {
		return s.WaitingFetchesForTest() == 1
	})
	if _, err := e.sim.Pay(waiting.OrderCode, ordersync.Buyer{Name: "Ana", Email: "ana@example.com"}); err != nil {
		t.Fatalf("Pay: %v", err)
	}
	e.publish(t, e.webhook(waiting.OrderID, ordersync.EventSuccessPayment))
	e.waitDrained(t, 10*time.Second)

	if n := e.sim.Stats().GetsByOrder[waiting.OrderCode]; n != 1 {
		t.Errorf("the service saw %d requests for the order, want 1: the waiting fetch answers the webhook that arrived meanwhile", n)
	}
	if got := counterValue(t, e.reg, "ordersync_worker_events_coalesced_total", nil); got != 1 {
		t.Errorf("coalesced = %v, want 1", got)
	}
	e.assertMirrorMatchesSim(t, []string{first.OrderCode, waiting.OrderCode})
}

// TestPoolUnresolved: an event for an order the mirror never learns is
// dead-lettered "unresolved" after the retry schedule; one whose order is
// recorded during the schedule syncs.
func TestPoolUnresolved(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	amount := ordersync.MustAmount("12.00")
	late, err := e.sim.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount})
	if err != nil {
		t.Fatalf("CreatePaymentLink: %v", err)
	}
	e.publish(t, e.webhook("990001", ordersync.EventCreated), e.webhook(late.OrderID, ordersync.EventCreated))
	delays := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}
	missed := &missSignal{DB: e.db, id: late.OrderID, missed: make(chan struct{})}
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) { c.UnresolvedRetryDelays, c.Mirror = delays, missed })

	select { // the first try of the late order has failed
	case <-missed.missed:
	case <-time.After(10 * time.Second):
		t.Fatal("the pool never looked the late order up")
	}
	if err := e.db.RecordOrderRef(context.Background(), ordersync.OrderRef{
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
	*store.DB
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
			e := newEnv(t, sim.Faults{})
			if tt.ref != nil {
				if err := e.db.RecordOrderRef(context.Background(), *tt.ref); err != nil {
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
	e := newEnv(t, sim.Faults{})
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

	evs, err := e.db.ListEvents(context.Background(), ordersync.EventFilter{Limit: 10})
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
	e := newEnv(t, sim.Faults{ServerErrorRate: 1})
	orders := e.createOrders(t, 10)
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
		e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	}
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Breaker = worker.BreakerConfig{ConsecutiveFailures: 5, OpenFor: 150 * time.Millisecond}
	})
	e.startPool(t, s, nil)

	waitFor(t, 5*time.Second, "breaker open", func() bool {
		return counterValue(t, e.reg, "ordersync_upstream_breaker_open", nil) == 1 &&
			counterValue(t, e.reg, "ordersync_fetch_requests_total", map[string]string{"outcome": "breaker_open"}) > 0
	})
	// A window of a few open periods and failed probes that proves no
	// event is dead-lettered during the outage: what must not happen has
	// no signal to wait for.
	time.Sleep(500 * time.Millisecond)
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

// TestPoolDrainAcksCommitted: cancelling Run finishes the fetches in flight,
// commits and acknowledges them, and leaves the rest in the queue for the
// next worker.
func TestPoolDrainAcksCommitted(t *testing.T) {
	e := newEnv(t, sim.Faults{GetLatency: 30 * time.Millisecond})
	orders := e.createOrders(t, 40)
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
		e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	}
	s := e.newSyncer(t, nil, nil)
	stop := e.startPool(t, s, func(c *worker.PoolConfig) { c.FetchConcurrency = 4; c.BatchSize = 8 })
	waitFor(t, 5*time.Second, "a first commit", func() bool {
		return counterValue(t, e.reg, "ordersync_mirror_upserts_total", nil) > 0
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// Run returns once every delivery is settled by an ack or a nak sent
	// to the server; the server counts them when they arrive, so the test
	// waits for its count rather than reading it at once.
	var pending, ackPending int
	waitFor(t, 5*time.Second, "every delivered event settled after the drain", func() bool {
		pending, ackPending, _ = e.consumerState(t)
		return ackPending == 0
	})
	evs, err := e.db.ListEvents(context.Background(), ordersync.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if len(evs)+pending != len(orders) {
		t.Errorf("%d events synced + %d still queued, want %d: everything delivered was committed and acked", len(evs), pending, len(orders))
	}
	if pending == 0 {
		t.Log("drain happened after every event was pulled; the test proves less")
	}

	e.startPool(t, s, nil) // the next worker finishes the rest
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, codes)
}

// TestPoolYieldsToWebhooks: while the receiver's publish wait is above the
// target, the pool starts no fetch and the events wait in the queue; between
// a quarter of the target and the target it holds, but not for long, so the
// events sync; when no webhooks come it is back at full concurrency; and a
// drain that begins while it yields runs at full speed. The test counts
// the pool's reads of Pressure (one per interval, each followed by its
// decision) instead of sleeping, so the first two checks end before the
// hold's bound (20 reads) lets a fetch through however slow the machine.
func TestPoolYieldsToWebhooks(t *testing.T) {
	const target = 2 * time.Millisecond
	e := newEnv(t, sim.Faults{})
	first, second := e.createOrders(t, 10), e.createOrders(t, 10)
	var wait atomic.Int64 // the publish wait Pressure reports; 0: no webhooks
	wait.Store(int64(10 * time.Millisecond))
	var reads atomic.Int64 // how many times the pool read Pressure
	stop := e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.PressureTarget, c.PressureInterval = target, 20*time.Millisecond
		c.DrainTimeout = 5 * time.Second
		c.Pressure = func() (time.Duration, int64) {
			reads.Add(1)
			if w := wait.Load(); w > 0 {
				return time.Duration(w), 100
			}
			return 0, 0
		}
	})
	limit := func() float64 { return counterValue(t, e.reg, "ordersync_worker_fetch_limit", nil) }
	waitFor(t, 2*time.Second, "the fetch limit to fall to 0", func() bool { return limit() == 0 })
	// decided waits until the pool has taken n more decisions: the read
	// after the n-th is made once the n-th decision was applied.
	decided := func(n int64) {
		t.Helper()
		until := reads.Load() + n + 1
		waitFor(t, 5*time.Second, "the pool's pressure checks", func() bool { return reads.Load() >= until })
	}

	publishCreated := func(orders []ordersync.PaymentLinkResult) []string {
		var codes []string
		for _, o := range orders {
			codes = append(codes, o.OrderCode)
			e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
		}
		return codes
	}
	firstCodes := publishCreated(first)
	waitFor(t, 2*time.Second, "the pool to hold the first events", func() bool {
		_, ackPending, _ := e.consumerState(t)
		return ackPending == len(first)
	})
	decided(5)
	if gets := e.sim.Stats().Gets; gets != 0 {
		t.Fatalf("%d fetches while the receiver was short of CPU, want none", gets)
	}
	wait.Store(int64(target * 2 / 5)) // under half the target, over a quarter of it: hold
	decided(3)                        // under the 20 it holds for
	if l, gets := limit(), e.sim.Stats().Gets; l != 0 || gets != 0 {
		t.Fatalf("between a quarter of the target and the target: limit %v and %d fetches, want the limit held at 0 and none", l, gets)
	}
	// Held for long, the limit rises anyway: whatever keeps the wait in
	// between, syncing goes on.
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, firstCodes)

	wait.Store(0)
	waitFor(t, 2*time.Second, "the fetch limit to return to 16", func() bool { return limit() == 16 })

	wait.Store(int64(10 * time.Millisecond))
	waitFor(t, 2*time.Second, "the fetch limit to fall to 0 again", func() bool { return limit() == 0 })
	secondCodes := publishCreated(second)
	waitFor(t, 2*time.Second, "the pool to hold the second events", func() bool {
		_, ackPending, _ := e.consumerState(t)
		return ackPending == len(second)
	})
	if err := stop(); err != nil {
		t.Fatalf("pool Run: %v", err)
	}
	e.waitDrained(t, time.Second)
	e.assertMirrorMatchesSim(t, secondCodes)
}

// TestPoolSyncsWhileTheWaitStaysHigh: a publish wait that stays above the
// target with no fetch left to take away is one yielding cannot bring down
// (the receiver at its own limit): after the hold's bound the pool lets one
// fetch through for an interval, again and again, so events still sync, one
// fetch at a time, while webhooks keep flowing.
func TestPoolSyncsWhileTheWaitStaysHigh(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	orders := e.createOrders(t, 10)
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.PressureTarget, c.PressureInterval = 2*time.Millisecond, 2*time.Millisecond
		c.Pressure = func() (time.Duration, int64) { return 10 * time.Millisecond, 100 }
	})
	limit := func() float64 { return counterValue(t, e.reg, "ordersync_worker_fetch_limit", nil) }
	waitFor(t, 2*time.Second, "the fetch limit to fall to 0", func() bool { return limit() == 0 })
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
		e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	}
	highest := 0.0
	waitFor(t, 10*time.Second, "the events to sync while the wait stays high", func() bool {
		highest = max(highest, limit())
		_, ackPending, settled := e.consumerState(t)
		return settled && ackPending == 0
	})
	if highest > 1 {
		t.Errorf("the fetch limit rose to %v while the wait stayed high, want at most 1", highest)
	}
	e.assertMirrorMatchesSim(t, codes)
}
