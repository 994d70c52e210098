package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/sim"
)

// externalServices returns the PostgreSQL URL of a fresh schema at the
// current schema version, the NATS URL and a fresh namespace on the
// servers this machine runs, or skips.
func externalServices(t *testing.T) (databaseURL, natsURL, namespace string) {
	run := testdb.Services(t)
	return run.DatabaseURL, run.NATSURL, run.Namespace
}

// TestScaleOutEndToEnd: the same pipeline on PostgreSQL and an external NATS
// server, with leader election for the relay and the reconciler, mirrors
// every order exactly and fires each PAID trigger once.
func TestScaleOutEndToEnd(t *testing.T) {
	// It waits on the webhooks and the leases, on a schema and a NATS
	// namespace of its own.
	t.Parallel()
	dbURL, natsURL, ns := externalServices(t)
	st := startTestStack(t, app.StackOptions{
		Seed:   3,
		Faults: sim.Faults{DuplicateRate: 0.2, ReorderRate: 0.2, ReorderDelay: 50 * time.Millisecond},
		Configure: func(c *app.Config) {
			c.DatabaseURL, c.NATSURL, c.NATSNamespace = dbURL, natsURL, ns
		},
	})
	rng := rand.New(rand.NewPCG(3, 3))
	codes, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 40, rng)
	if err != nil {
		t.Fatal(err)
	}
	st.Sim.ActAsBuyers(codes, rng)
	// The deadlines are against a broken pipeline, not a busy machine,
	// where PostgreSQL and the external NATS share the cores.
	waitMirrorMatches(t, st, 60*time.Second)
	if st.Program.DB().Dialect() != "postgres" {
		t.Fatalf("the mirror is %s, want postgres", st.Program.DB().Dialect())
	}
	testenv.Await(t, 30*time.Second, 200*time.Millisecond, func() error {
		triggers, err := st.Program.CountPaidTriggers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, o := range st.Sim.Orders() {
			if n := triggers[o.OrderCode]; n > 1 || (o.OrderStatus.IsPaidState() && n != 1) {
				bad++
			}
		}
		if bad != 0 {
			return fmt.Errorf("%d orders without exactly one PAID trigger", bad)
		}
		return nil
	})
	// The relay ran as the elected leader.
	if got := gaugeValue(st.Program.Registry(), "ordersync_leader", "role", "relay"); got != 1 {
		t.Errorf("ordersync_leader{role=relay} = %v, want 1", got)
	}
}

// gaugeValue reads a gauge series whose label has value.
func gaugeValue(g prometheus.Gatherer, name, label, value string) float64 {
	for _, m := range family(g, name) {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
