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
// checks the command, not the figures (docs/benchmarks.md "Idle cost");
// with --steady, that the reconciler makes no catch-up or evidence check.
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
	// --steady: serve starts past the catch-up, so the reconciler's
	// checks, if any in the window, are the quiet tier's alone.
	opts.Steady = true
	var steady bytes.Buffer
	if err := runIdle(t.Context(), &steady, opts); err != nil {
		t.Fatalf("measure --steady: %v\n%s", err, steady.String())
	}
	if !strings.Contains(steady.String(), "steady: 20 orders last active 3h0m0s earlier") {
		t.Errorf("idle --steady did not age the mirror:\n%s", steady.String())
	}
	_, checks, _ := strings.Cut(steady.String(), "reconciler checks")
	checks, _, _ = strings.Cut(checks, "\n")
	for _, reason := range []string{"catch_up", "evidence", "active"} {
		if strings.Contains(checks, reason) {
			t.Errorf("idle --steady made %s checks, want quiet ones alone:\n%s", reason, steady.String())
		}
	}
	opts.Orders = 21
	if err := runIdle(t.Context(), &out, opts); err == nil {
		t.Error("idle on a directory prepared with 20 orders measured 21")
	}
}
