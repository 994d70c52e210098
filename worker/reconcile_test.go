package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestReconcilerReachesQuietOrders: every order was paid while its webhook
// was lost. With a budget of 2 per pass, the newest orders always win by
// priority, yet the stalest share of each pass reaches the quiet ones, so
// the mirror converges within a bounded number of passes (the lost-webhook
// starvation the chaos run found).
func TestReconcilerReachesQuietOrders(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	orders := e.createOrders(t, 6)
	for _, o := range orders {
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
			t.Fatal(err)
		}
		if _, err := e.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
			t.Fatal(err)
		}
	}
	drift := 0
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{
		Source: e.db, Syncer: s, Budget: 2, Registerer: prometheus.NewRegistry(),
		OnDrift: func(kind string) {
			if kind == "missed_webhook" {
				drift++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for pass := 1; pass <= 5; pass++ {
		// Every order is due every pass, as when passes come often.
		rep, err := rec.RunOnce(ctx, ordersync.ReconcileFilter{SyncedBefore: time.Now().Add(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Fetched > 2 {
			t.Fatalf("pass %d fetched %d orders, over its budget of 2", pass, rep.Fetched)
		}
		changed += len(rep.Changed)
	}
	for _, o := range orders {
		m, err := e.db.FindOrderByCode(ctx, ordersync.DefaultAccount, o.OrderCode)
		if err != nil {
			t.Fatal(err)
		}
		if m.Order.OrderStatus != ordersync.StatusPaid {
			t.Errorf("order %s is still %s after 5 passes", o.OrderCode, m.Order.OrderStatus)
		}
	}
	if changed != 6 || drift != 6 {
		t.Errorf("passes reported %d changes and %d missed webhooks, want 6 and 6", changed, drift)
	}
}
