// Command ordersync keeps a SQL mirror of payment-link orders true to the
// payment link service and fires fulfilment exactly once when an order is
// paid. `ordersync demo` runs the whole thing against the built-in simulator.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
)

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ordersync:", err)
		os.Exit(1)
	}
}

// tuneGC trades memory for fewer collections: at the default GOGC=100 a
// collection every ~90ms under full webhook load put the ack p99 over 10ms.
// GOGC, when set, wins.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// limitServeMemory bounds the heap of the service: GOGC=400 alone let it
// grow to ~220 MB RSS under the loadtest; a 100 MiB soft limit keeps it at
// ~130 MB with no measurable cost in throughput (see README, Benchmarks).
// Only serve sets it: the commands that hold a simulator and a load
// generator (loadtest, demo, chaos) need more than that, and under the limit
// spent a third of their CPU collecting. GOMEMLIMIT, when set, wins.
func limitServeMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(100 << 20)
	}
}

// spareProcForSQLite gives the scheduler one P (Go's right to run code on a
// thread) more than its default when the mirror is SQLite. The mirror's one
// writer spends most of its time in cgo calls into SQLite, and a cgo call
// keeps its P until the runtime takes it back, so with two Ps on two cores
// the receiver's handlers often had one P between them: with every role in
// one process, ack p50 was 20 ms and ingest 3.0k webhooks/s on this machine,
// against 12-14 ms and 4.2-4.6k/s with the spare P (3 and 4 Ps measured the
// same; see README, Benchmarks). Setting it stops Go from following later
// changes of a container's CPU limit; the default it adds to already
// reflects the limit at start. GOMAXPROCS, when set, wins.
func spareProcForSQLite() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
}
