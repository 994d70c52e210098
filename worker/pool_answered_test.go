package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestPoolSkipsWebhooksALaterFetchAnswered: a webhook received before the
// request of the order's last applied fetch left is acknowledged with no
// request of its own, and logged as already_fetched; one received after
// that fetch is fetched.
func TestPoolSkipsWebhooksALaterFetchAnswered(t *testing.T) {
	ctx := context.Background()
	e := newPoolEnv(t, sim.Faults{})
	o := e.createOrders(t, 1)[0]
	syncer := e.newSyncer(t, nil, nil)
	if _, err := e.sim.Apply(o.OrderCode, sim.ActionPay, nil); err != nil {
		t.Fatal(err)
	}
	// The webhook is received (a millisecond before the fetch, so the
	// mirror's microseconds cannot make them equal), then a fetch for
	// another cause mirrors the payment before the pool takes the webhook.
	early := e.webhook(o.OrderID, ordersync.EventSuccessPayment)
	early.ReceivedAt = time.Now().Add(-time.Millisecond)
	if _, err := syncer.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
		t.Fatal(err)
	}
	var evidence int
	e.startPool(t, syncer, func(c *worker.PoolConfig) {
		c.Evidence = func(context.Context, string, time.Time, string) error { evidence++; return nil }
	})
	e.publish(t, early)
	e.waitDrained(t, 10*time.Second)
	if n := e.sim.Stats().GetsByOrder[o.OrderCode]; n != 1 {
		t.Errorf("%d requests for the order, want 1 (the fetch that answered the webhook)", n)
	}
	if got := counterValue(t, e.reg, "ordersync_worker_events_already_fetched_total", nil); got != 1 {
		t.Errorf("already fetched events %v, want 1", got)
	}
	evs, err := e.mirror.ListEvents(ctx, ordersync.EventFilter{Limit: 10})
	if err != nil || len(evs) != 1 || evs[0].Outcome != ordersync.OutcomeAlreadyFetched || evs[0].OrderCode != o.OrderCode {
		t.Errorf("event log %+v, %v; want the webhook, already_fetched", evs, err)
	}
	e.assertMirrorMatchesSim(t, []string{o.OrderCode})

	// Received after the last fetch: the order may have changed since.
	if _, err := e.sim.Apply(o.OrderCode, sim.ActionFinalize, nil); err != nil {
		t.Fatal(err)
	}
	e.publish(t, e.webhook(o.OrderID, ordersync.EventFinalized))
	e.waitDrained(t, 10*time.Second)
	waitFor(t, 10*time.Second, "the second webhook's fetch", func() bool { return e.sim.Stats().GetsByOrder[o.OrderCode] == 2 })
	e.assertMirrorMatchesSim(t, []string{o.OrderCode})
	if evidence != 0 {
		t.Errorf("%d evidence reports for changes mirrored by webhooks and a track, want none", evidence)
	}
}

// TestLateWebhookTightensTheAccount: a webhook that arrives for a status a
// reconciler check had already mirrored is evidence that the account's
// webhooks are late or lost, and puts its recent orders on dense checks.
func TestLateWebhookTightensTheAccount(t *testing.T) {
	ctx := context.Background()
	e := newPoolEnv(t, sim.Faults{})
	o := e.createOrders(t, 1)[0]
	syncer := e.newSyncer(t, nil, nil)
	reg := prometheus.NewRegistry()
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: e.mirror, Syncer: syncer, Registerer: reg, Logger: e.logger})
	if err != nil {
		t.Fatal(err)
	}
	e.startPool(t, syncer, func(c *worker.PoolConfig) {
		c.Evidence = func(ctx context.Context, account string, now time.Time, kind string) error {
			return rec.Tighten(ctx, now, kind)
		}
	})
	// Created by its webhook, then paid with no webhook: a check finds it.
	e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	e.waitDrained(t, 10*time.Second)
	if _, err := e.sim.Apply(o.OrderCode, sim.ActionPay, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := syncer.CheckOrder(ctx, ordersync.DefaultAccount, o.OrderCode, nil); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "late_webhook"}); got != 0 {
		t.Fatalf("late_webhook evidence %v before the webhook, want 0", got)
	}
	e.publish(t, e.webhook(o.OrderID, ordersync.EventSuccessPayment))
	e.waitDrained(t, 10*time.Second)
	if got := counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "late_webhook"}); got != 1 {
		t.Errorf("late_webhook evidence %v, want 1", got)
	}
	dense, err := e.mirror.DenseChecks(ctx, ordersync.DefaultAccount)
	if err != nil || !dense.Until.After(time.Now()) {
		t.Errorf("dense checks %+v, %v; want the account's recent orders checked densely", dense, err)
	}
	e.assertMirrorMatchesSim(t, []string{o.OrderCode})
}

// TestPoolFetchesAWebhookReceivedDuringAFetch: a fetch answered after a
// webhook was received, but sent before, may not hold its change (the
// mirror records when the request left, not when its answer came), so the
// webhook is fetched.
func TestPoolFetchesAWebhookReceivedDuringAFetch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newPoolEnv(t, sim.Faults{GetLatency: time.Second})
	o := e.createOrders(t, 1)[0]
	syncer := e.newSyncer(t, nil, nil)
	done := make(chan error, 1)
	go func() {
		_, err := syncer.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack)
		done <- err
	}()
	waitFor(t, 5*time.Second, "the fetch's request", func() bool { return e.sim.Stats().GetsByOrder[o.OrderCode] == 1 })
	during := e.webhook(o.OrderID, ordersync.EventSuccessPayment)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.startPool(t, syncer, nil)
	e.publish(t, during)
	e.waitDrained(t, 10*time.Second)
	if n := e.sim.Stats().GetsByOrder[o.OrderCode]; n != 2 {
		t.Errorf("%d requests for the order, want 2: the webhook arrived while the first was in flight", n)
	}
	e.assertMirrorMatchesSim(t, []string{o.OrderCode})
}

// lastFetchReads is the mirror, counting its reads of last fetches.
type lastFetchReads struct {
	DB
	n atomic.Int64
}

func (m *lastFetchReads) LastFetches(ctx context.Context, account string, codes []string) (map[string]ordersync.LastFetch, error) {
	m.n.Add(1)
	return m.DB.LastFetches(ctx, account, codes)
}

// TestPoolReadsAPullsLastFetchesAtOnce: the last fetches of a pull's
// orders come from one read of the mirror, not one per order, and each
// order's webhook is judged by its own order's last fetch.
func TestPoolReadsAPullsLastFetchesAtOnce(t *testing.T) {
	ctx := context.Background()
	const n = 40
	e := newPoolEnv(t, sim.Faults{})
	orders := e.createOrders(t, n)
	syncer := e.newSyncer(t, nil, nil)
	var evs []*ordersync.InboundEvent
	for i, o := range orders {
		ev := e.webhook(o.OrderID, ordersync.EventCreated)
		ev.ReceivedAt = time.Now().Add(-time.Millisecond)
		evs = append(evs, ev)
		// Every other order is fetched after its webhook was received.
		if i%2 == 0 {
			if _, err := syncer.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.publish(t, evs...)
	reads := &lastFetchReads{DB: e.mirror}
	e.startPool(t, syncer, func(c *worker.PoolConfig) { c.Mirror = reads })
	e.waitDrained(t, 10*time.Second)
	waitFor(t, 10*time.Second, "a fetch of every order", func() bool { return len(e.sim.Stats().GetsByOrder) == n })
	var codes []string
	for i, o := range orders {
		codes = append(codes, o.OrderCode)
		if got := e.sim.Stats().GetsByOrder[o.OrderCode]; got != 1 {
			t.Errorf("order %d: %d requests, want 1", i, got)
		}
	}
	if got := counterValue(t, e.reg, "ordersync_worker_events_already_fetched_total", nil); got != n/2 {
		t.Errorf("already fetched events %v, want %d", got, n/2)
	}
	// The webhooks were queued before the pool started: a pull takes up
	// to 100, so a few pulls take them all.
	if got := reads.n.Load(); got == 0 || got > n/10 {
		t.Errorf("%d reads of last fetches for %d webhooks, want one per pull (at most %d)", got, n, n/10)
	}
	e.assertMirrorMatchesSim(t, codes)
}
