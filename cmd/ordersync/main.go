// Command ordersync keeps a SQL mirror of payment-link orders true to the
// payment link service and fires fulfilment exactly once when an order is
// paid. `ordersync demo` runs the whole thing against the built-in simulator.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ordersync:", err)
		os.Exit(1)
	}
}
