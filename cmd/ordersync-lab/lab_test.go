package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
)

// testBinary is the ordersync binary the lab's tests run, built once.
var testBinary string

// TestMain builds the real ordersync binary, which the lab runs as its
// child, as it does for an operator.
func TestMain(m *testing.M) {
	dir, err := testBinaryDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBinary, err = buildOrdersync(context.Background(), os.Stderr, filepath.Join(dir, "ordersync"))
	if err == nil {
		err = syscall.Flock(int(locked.Fd()), syscall.LOCK_SH)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The chaos and multi-process runs, and the short ones beside them,
	// mostly wait: all four at once, not GOMAXPROCS's two.
	testenv.WaitingParallel(4)
	leak.Main(m)
}

// testBinaryDir is where TestMain builds ordersync: a directory kept
// across runs for this checkout, so that go build finds the binary up to
// date and does not link it again (a link is seconds of CPU on every run
// of the package). The directory's lock is held by this process until it
// exits, exclusive while it builds and shared after: a run never rewrites
// the binary another run is executing.
func testBinaryDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(wd))
	dir := filepath.Join(cache, "ordersync-lab-test", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	// Held (and the file kept open) until the process exits.
	locked = f
	return dir, nil
}

// locked is testBinaryDir's lock, open for the life of the test binary.
var locked *os.File
