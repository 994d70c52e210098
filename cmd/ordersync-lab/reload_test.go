package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestReload is the reload run in its CI size: half a second of traffic
// from 4 senders after each of four SIGHUPs (a new admin token with the webhook
// secret's rotation, the new secret alone, two invalid files). Every
// reload takes effect or is refused whole, no request is answered against
// the settings in force or meets a closed port, and /readyz never falters.
func TestReload(t *testing.T) {
	if testing.Short() {
		t.Skip("the reload test takes about 20 s; skipped with -short")
	}
	t.Parallel()
	opts := defaultReloadOptions()
	// Short phases: the subject is each reload under traffic, which the
	// senders keep up through the SIGHUP and the wait for its effect; the
	// phases between only need the least traffic below.
	opts.Phase, opts.ProbeEvery, opts.exe = 500*time.Millisecond, 50*time.Millisecond, testBinary
	// Five phases: each carries a fifth of the traffic asked for below,
	// however slowly a loaded machine serves it.
	opts.MinPhase.Webhooks, opts.MinPhase.Admin, opts.MinPhase.Probes = 20, 2, 10
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := runReload(ctx, &out, opts)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("reload test failed: %v", rep.Problems)
	}
	// The reloads must have met traffic, or they prove nothing.
	if rep.Webhooks < 100 || rep.Admin < 10 || rep.Probes < 50 {
		t.Errorf("%d webhooks, %d admin requests, %d probes: want traffic through every reload", rep.Webhooks, rep.Admin, rep.Probes)
	}
}
