package worker_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestPoolEndToEnd: events for orders in several states go through the
// queue; the mirror ends equal to the simulator, every event is logged as
// synced, and the consumer holds nothing. It is the pool's test on the
// real SQLite mirror and JetStream; the tests of its logic use fakes.
func TestPoolEndToEnd(t *testing.T) {
	t.Parallel()
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
	evs, err := e.mirror.ListEvents(context.Background(), ordersync.EventFilter{Limit: 1000})
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
	if top := histogramTopBucket(t, e.reg, "ordersync_sync_lag_seconds"); top < 3600 {
		t.Errorf("sync lag's top bucket is %vs: an outage's lag of minutes would read as that; want an hour or more", top)
	}
	if got := counterValue(t, e.reg, "ordersync_mirror_status_changes_total", map[string]string{"status": "PAID"}); got != 10 {
		t.Errorf("status changes to PAID = %v, want 10", got)
	}
}

// TestPoolCoalescesBursts: ten events for each of 50 orders, interleaved,
// cost at most two fetches per order.
func TestPoolCoalescesBursts(t *testing.T) {
	t.Parallel()
	const perOrder = 10
	e := newPoolEnv(t, sim.Faults{GetLatency: 50 * time.Millisecond})
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
	evs, err := e.mirror.ListEvents(context.Background(), ordersync.EventFilter{Limit: 1000})
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
	t.Parallel()
	e := newPoolEnv(t, sim.Faults{})
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

// TestPoolDrainAcksCommitted: cancelling Run finishes the fetches in flight,
// commits and acknowledges them, and leaves the rest in the queue for the
// next worker. On JetStream, since what the drain leaves is its redelivery
// and ack-pending state.
func TestPoolDrainAcksCommitted(t *testing.T) {
	t.Parallel()
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

	// Run returns once every queued event is settled by an ack sent to the
	// server, which counts them when they arrive. Every event is then
	// committed (in the event log), still queued, or handed back by the
	// queue from a pull abandoned at the cancel (a nak: it stays the
	// consumer's ack-pending until redelivered), each exactly once: an
	// event committed and not acknowledged would count twice. The test
	// waits for that condition, not for ack-pending to reach zero.
	var evs []ordersync.EventRecord
	var pending, ackPending int
	waitFor(t, 30*time.Second, "every committed event acknowledged after the drain", func() bool {
		pending, ackPending, _ = e.consumerState(t)
		var err error
		if evs, err = e.mirror.ListEvents(context.Background(), ordersync.EventFilter{Limit: 1000}); err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		return len(evs)+pending+ackPending == len(orders)
	})
	if ackPending > 0 {
		t.Logf("%d events handed back from the pull abandoned at the drain", ackPending)
	}
	if pending+ackPending == 0 {
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
// decision) instead of sleeping, and for the first two checks lets the
// pool read only as often as it checks, so that the hold's bound (20
// reads) cannot let a fetch through while the test is not scheduled.
func TestPoolYieldsToWebhooks(t *testing.T) {
	const target = 2 * time.Millisecond
	e := newPoolEnv(t, sim.Faults{})
	first, second := e.createOrders(t, 10), e.createOrders(t, 10)
	var wait atomic.Int64 // the publish wait Pressure reports; 0: no webhooks
	wait.Store(int64(10 * time.Millisecond))
	var reads atomic.Int64 // how many times the pool read Pressure
	// The pool's read number n waits while n > allowed.
	var mu sync.Mutex
	allowedRead := sync.NewCond(&mu)
	allowed := int64(math.MaxInt64)
	setAllowed := func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		allowed = n
		allowedRead.Broadcast()
	}
	stop := e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.PressureTarget, c.PressureInterval = target, 20*time.Millisecond
		c.DrainTimeout = 5 * time.Second
		c.Pressure = func() (time.Duration, int64) {
			n := reads.Add(1)
			mu.Lock()
			for n > allowed {
				allowedRead.Wait()
			}
			mu.Unlock()
			if w := wait.Load(); w > 0 {
				// A flood at the default PressureMinRate even for a
				// read seconds late.
				return time.Duration(w), 10000
			}
			return 0, 0
		}
	})
	// Before the pool's stop (cleanups run last first): a pool held at a
	// read would not stop.
	t.Cleanup(func() { setAllowed(math.MaxInt64) })
	limit := func() float64 { return counterValue(t, e.reg, "ordersync_worker_fetch_limit", nil) }
	waitFor(t, 2*time.Second, "the fetch limit to fall to 0", func() bool { return limit() == 0 })
	// From here the pool reads Pressure once more and then waits for
	// decided.
	setAllowed(reads.Load() + 1)
	// decided lets the pool take n more decisions and waits until it has:
	// the read after the n-th starts once the n-th decision was applied,
	// and waits there.
	decided := func(n int64) {
		t.Helper()
		mu.Lock()
		until := allowed + n
		mu.Unlock()
		setAllowed(until)
		waitFor(t, 10*time.Second, "the pool's pressure checks", func() bool { return reads.Load() > until })
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
	setAllowed(math.MaxInt64)
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

// TestPoolDoesNotYieldToABurst: webhooks answered slowly but fewer than
// PressureMinRate a second (the default 2,000; here 5 in each 20 ms
// interval, 250 a second) are a burst the pool syncs as it comes, not a
// flood: it keeps every fetch, and the events sync at once. Stopping for
// them, it left a demo's burst a quarter of a second in the queue. The
// test counts the pool's reads of Pressure instead of sleeping.
func TestPoolDoesNotYieldToABurst(t *testing.T) {
	e := newPoolEnv(t, sim.Faults{})
	orders := e.createOrders(t, 10)
	var reads atomic.Int64
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.PressureTarget, c.PressureInterval = 2*time.Millisecond, 20*time.Millisecond
		c.Pressure = func() (time.Duration, int64) {
			reads.Add(1)
			return 10 * time.Millisecond, 5
		}
	})
	limit := func() float64 { return counterValue(t, e.reg, "ordersync_worker_fetch_limit", nil) }
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
		e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	}
	until := reads.Load() + 5
	waitFor(t, 5*time.Second, "five reads of the publish wait", func() bool {
		if l := limit(); l != 16 {
			t.Fatalf("the fetch limit fell to %v under a burst of 250 webhooks a second, want it kept at 16", l)
		}
		return reads.Load() >= until
	})
	e.waitDrained(t, 5*time.Second)
	e.assertMirrorMatchesSim(t, codes)
}

// TestPoolSyncsWhileTheWaitStaysHigh: a publish wait that stays above the
// target with no fetch left to take away is one yielding cannot bring down
// (the receiver at its own limit): after the hold's bound the pool lets one
// fetch through for an interval, again and again, so events still sync, one
// fetch at a time, while webhooks keep flowing.
func TestPoolSyncsWhileTheWaitStaysHigh(t *testing.T) {
	e := newPoolEnv(t, sim.Faults{})
	orders := e.createOrders(t, 10)
	e.startPool(t, e.newSyncer(t, nil, nil), func(c *worker.PoolConfig) {
		c.PressureTarget, c.PressureInterval = 2*time.Millisecond, 2*time.Millisecond
		c.Pressure = func() (time.Duration, int64) { return 10 * time.Millisecond, 10000 }
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
