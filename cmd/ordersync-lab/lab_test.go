package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
)

// testBinary is the ordersync binary the lab's tests run, built once.
var testBinary string

// TestMain builds the real ordersync binary, which the lab runs as its
// child, as it does for an operator.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ordersync-lab-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBinary, err = buildOrdersync(context.Background(), os.Stderr, filepath.Join(dir, "ordersync"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The chaos and multi-process runs, and the short ones beside them,
	// mostly wait: all four at once, not GOMAXPROCS's two.
	testenv.WaitingParallel(4)
	leak.Main(m, func() { os.RemoveAll(dir) })
}
