package main

import (
	"strings"
	"testing"
)

// TestWorkersYieldBesideTheReceiver: serve's worker pool yields the CPU to
// webhook bursts where the receiver shares its process and the embedded
// NATS, and exports the limit it runs at; without a receiver in the process
// it has nothing to yield to, and where every publish waits for an fsync
// the publish wait says nothing about the CPU. (TestScaleOutEndToEnd checks
// that it does not yield with an external NATS.)
func TestWorkersYieldBesideTheReceiver(t *testing.T) {
	st := startTestStack(t, stackOptions{Workers: 24})
	if !st.Program.pool.Yields() {
		t.Error("with every role and the embedded NATS, the workers do not yield to the receiver")
	}
	if !strings.Contains(metricsPage(t, st), "\nordersync_worker_fetch_limit 24\n") {
		t.Error("metrics lack ordersync_worker_fetch_limit 24, the pool's concurrency at rest")
	}

	workersOnly := startTestStack(t, stackOptions{Configure: func(c *Config) { c.Role = "worker,relay,reconciler" }})
	if workersOnly.Program.pool.Yields() {
		t.Error("without a receiver in the process, the workers yield to one")
	}
	fsyncing := startTestStack(t, stackOptions{Configure: func(c *Config) { c.JetStreamSync = "always" }})
	if fsyncing.Program.pool.Yields() {
		t.Error("with jetstream_sync: always, where every publish waits for the disk, the workers yield to the receiver")
	}
}
