package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestDiskFillsAndEmpties: the data directory (SQLite and the embedded
// JetStream) sits on a small tmpfs that fills up while buyers act, then
// gets its space back. While full, webhooks are refused with 503 and
// /readyz fails; afterwards, with no restart, every order in the mirror
// equals the simulator's, every paid order has one PAID trigger, and
// SQLite's integrity check passes. With a watermark the disk never fills:
// the refusals come before any write fails. Without one the writes fail
// (ENOSPC) and the embedded JetStream is reloaded when space returns.
func TestDiskFillsAndEmpties(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, minFree string
		leave         uint64 // free bytes the filler leaves
	}{
		{"watermark", "16MiB", 8 << 20},
		{"ENOSPC", "off", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mnt := testenv.MountTmpfs(t, 96<<20)
			st := startTestStack(t, app.StackOptions{DataDir: mnt, Seed: 3, Configure: func(c *app.Config) { c.MinFreeSpace = tt.minFree }})
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(3, 3))
			codes, err := createDemoOrders(ctx, st.Program.AdminURL(), ordersync.DefaultAccount, 120, rng)
			if err != nil {
				t.Fatal(err)
			}
			// Buyers act on a few orders every 50 ms: 5 rounds before the
			// disk fills, 15 while it is full, 10 after (half the rounds
			// of old: the refusals, the 503s and the recovery all show
			// within them).
			var notReady atomic.Int64
			round := func(i int) {
				st.Sim.ActAsBuyers(codes[i*4:i*4+4], rng)
				if res, err := http.Get(st.Program.AdminURL() + "/readyz"); err == nil {
					if res.StatusCode == http.StatusServiceUnavailable {
						notReady.Add(1)
					}
					res.Body.Close()
				}
				time.Sleep(50 * time.Millisecond)
			}
			for i := range 5 {
				round(i)
			}
			filler := testenv.FillLeaving(t, mnt, tt.leave)
			for i := 5; i < 20; i++ {
				round(i)
			}
			full := notReady.Load()
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			for i := 20; i < 30; i++ {
				round(i)
			}
			if full == 0 {
				t.Errorf("/readyz never answered 503 while the disk was full")
			}
			if refused := counterValue(st.Program.Registry(), "ordersync_webhook_requests_total", "outcome", "unavailable"); refused == 0 {
				t.Errorf("no webhook was refused while the disk was full")
			}
			idle, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := st.Sim.WaitIdle(idle); err != nil {
				t.Fatalf("the simulator's webhooks not all answered 30s after the disk emptied: %v", err)
			}
			waitMirrorMatches(t, st, 60*time.Second)
			waitPaidTriggers(t, st, 30*time.Second)
			if err := st.Program.DB().CheckIntegrity(ctx); err != nil {
				t.Error(err)
			}
			res, err := http.Get(st.Program.AdminURL() + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("/readyz %d after the disk emptied, want 200", res.StatusCode)
			}
			t.Logf("readyz 503 in %d of 15 rounds while full", full)
		})
	}
}

// waitPaidTriggers waits until the outbox is empty (the relay marks sent
// only what JetStream acknowledged), then checks each simulator order has
// one PAID trigger if paid, none otherwise.
func waitPaidTriggers(t *testing.T, st *app.Stack, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	requireOutboxSent(t, st, timeout)
	triggers, err := st.Program.CountPaidTriggers(ctx)
	if err != nil {
		// What readiness said then, and whether a second count works,
		// tell a JetStream away for a moment from one gone for good.
		ready := "unanswered"
		if res, rerr := http.Get(st.Program.AdminURL() + "/readyz"); rerr == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			ready = fmt.Sprintf("%d %s", res.StatusCode, strings.TrimSpace(string(body)))
		}
		_, again := st.Program.CountPaidTriggers(ctx)
		t.Fatalf("count the PAID triggers: %v (then /readyz %s; counted again: %v)", err, ready, again)
	}
	for _, o := range st.Sim.Orders() {
		if n := triggers[o.OrderCode]; n > 1 || (o.OrderStatus.IsPaidState() && n != 1) {
			t.Errorf("order %s (%s): %d PAID triggers, want exactly one for a paid order", o.OrderCode, o.OrderStatus, n)
		}
	}
}
