package app

import (
	"context"
	"log/slog"
	"math"
	"testing"

	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/prometheus/client_golang/prometheus"
)

// TestWorkersYieldBesideTheReceiver: serve's worker pool yields the CPU to
// webhook bursts where the receiver shares its process and the embedded
// NATS, and exports the limit it runs at; without a receiver in the process
// it has nothing to yield to, and where every publish waits for an fsync
// the publish wait says nothing about the CPU. (TestWorkersDoNotYieldBesideExternalNATS
// checks that it does not yield with an external NATS.)
func TestWorkersYieldBesideTheReceiver(t *testing.T) {
	st := startTestStack(t, StackOptions{Workers: 24})
	if !st.Program.pool.Yields() {
		t.Error("with every role and the embedded NATS, the workers do not yield to the receiver")
	}
	if got := gaugeValue(t, st.Program.Registry(), "ordersync_worker_fetch_limit"); got != 24 {
		t.Errorf("ordersync_worker_fetch_limit = %v, want 24, the pool's concurrency at rest", got)
	}

	workersOnly := startTestStack(t, StackOptions{Configure: func(c *Config) { c.Role = "worker,relay,reconciler" }})
	if workersOnly.Program.pool.Yields() {
		t.Error("without a receiver in the process, the workers yield to one")
	}
	fsyncing := startTestStack(t, StackOptions{Configure: func(c *Config) { c.JetStreamSync = "always" }})
	if fsyncing.Program.pool.Yields() {
		t.Error("with jetstream_sync: always, where every publish waits for the disk, the workers yield to the receiver")
	}
}

// TestWorkersDoNotYieldBesideExternalNATS: with an external NATS, whose
// publish waits are not this process's CPU alone, the workers do not yield
// to the receiver.
func TestWorkersDoNotYieldBesideExternalNATS(t *testing.T) {
	run := testdb.Services(t)
	st := startTestStack(t, StackOptions{Configure: func(c *Config) {
		c.DatabaseURL, c.NATSURL, c.NATSNamespace = run.DatabaseURL, run.NATSURL, run.Namespace
	}})
	if st.Program.pool.Yields() {
		t.Error("with an external NATS, whose publish waits are not this process's CPU alone, the workers yield to the receiver")
	}
}

// TestAdminServerTimeouts: the admin listener drops half-sent and idle
// connections, as the webhook listener does; TestHostileLoad sees them go.
func TestAdminServerTimeouts(t *testing.T) {
	st := startTestStack(t, StackOptions{})
	srv := st.Program.adminSrv
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("admin server timeouts: read header %s, read %s, write %s, idle %s; want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	if srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 16<<10 {
		t.Errorf("admin server MaxHeaderBytes %d, want a few KiB", srv.MaxHeaderBytes)
	}
}

// gaugeValue is the value of a gauge without labels, or NaN when absent.
func gaugeValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.Metric) == 1 {
			return f.Metric[0].GetGauge().GetValue()
		}
	}
	return math.NaN()
}

// startTestStack starts a stack on a temporary data directory with a quiet
// logger, closed when the test ends.
func startTestStack(t *testing.T, opts StackOptions) *Stack {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	st, err := StartStack(context.Background(), opts)
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close stack: %v", err)
		}
	})
	return st
}
