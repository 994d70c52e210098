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
	// Reports and exports read time zones from the binary, so every machine
	// gives the same answer, with or without a system time zone database.
	_ "time/tzdata"
)

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, newRootCommand()); err != nil {
		fmt.Fprintln(os.Stderr, "ordersync:", err)
		os.Exit(1)
	}
}

// tuneGC trades memory for fewer collections, which keeps the webhook ack
// latency low under load (docs/configuration.md). GOGC, when set, wins.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// limitServeMemory bounds the heap that GOGC=400 lets grow, by
// chooseServeMemoryLimit: the container's memory limit when there is one. Only
// serve sets it: the commands that also hold a simulator and a load
// generator (demo, chaos, loadtest) need more, and would spend their CPU
// collecting under it. GOMEMLIMIT, when set, wins.
func limitServeMemory() {
	if limit, ok := chooseServeMemoryLimit(os.Getenv, cgroupMemoryLimit(os.DirFS("/"))); ok {
		debug.SetMemoryLimit(limit)
	}
}

// spareProcForSQLite gives the scheduler one P (Go's right to run code on a
// thread) more than its default when the mirror is SQLite: the mirror's one
// writer spends most of its time in cgo calls, which keep their P, so the
// receiver's handlers would otherwise share what is left. Setting it stops
// Go from following later changes of a container's CPU limit; the default
// it adds to already reflects the limit at start. GOMAXPROCS, when set, wins.
func spareProcForSQLite() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
}
