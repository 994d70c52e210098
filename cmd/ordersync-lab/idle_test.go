package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIdleRun: idle prepares a directory once and measures serve on it,
// reporting every figure; a second run reuses the directory, whose
// recreated orders must match the mirror's. The window is short: this
// checks the command, not the figures (docs/benchmarks.md "Idle cost").
func TestIdleRun(t *testing.T) {
	// Its pipeline mostly waits out the idle window: beside the other runs.
	t.Parallel()
	opts := idleOptions{Dir: filepath.Join(t.TempDir(), "idle"), Orders: 20, Window: time.Second, exe: testBinary}
	var out bytes.Buffer
	opts.PrepareOnly = true
	if err := runIdle(t.Context(), &out, opts); err != nil {
		t.Fatalf("prepare: %v\n%s", err, out.String())
	}
	opts.PrepareOnly = false
	if err := runIdle(t.Context(), &out, opts); err != nil {
		t.Fatalf("measure: %v\n%s", err, out.String())
	}
	for _, want := range []string{"prepared with 20 open orders", "CPU ", "wake-ups ", "goroutines ", "JetStream pulls ", "reconciler checks "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("idle's report lacks %q:\n%s", want, out.String())
		}
	}
	opts.Orders = 21
	if err := runIdle(t.Context(), &out, opts); err == nil {
		t.Error("idle on a directory prepared with 20 orders measured 21")
	}
}
