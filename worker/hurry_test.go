package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// hurryPhase runs the rig for d, and returns each order's checks and the
// simulated time each change was mirrored at.
func (r *promiseRig) hurryPhase(t *testing.T, d time.Duration) (checks map[string]int, changed map[string]time.Time) {
	t.Helper()
	checks, changed = map[string]int{}, map[string]time.Time{}
	for end := r.clock.now().Add(d); r.clock.now().Before(end); {
		rep := r.second(t)
		for _, c := range rep.Scheduled {
			checks[c.OrderCode]++
		}
		for _, c := range rep.Changed {
			changed[c.OrderCode] = r.clock.now()
		}
	}
	return checks, changed
}

// TestEvidenceHurriesRecentOrders: evidence that webhooks are being lost
// now (here a restart: the reconciler starts, or missed webhooks found at
// a rate) makes the orders active in the last minutes due within a minute:
// their changes whose webhooks were lost are mirrored within a minute of
// the evidence, not at the dense schedule's next check up to 4m20s on.
// Orders active before HurryWindow are not hurried, and after the hurry
// the schedule relaxes: a hurried order that changed is checked 15 s
// after the change, then 4m20s apart, and a second restart within
// HurryWindow of the first hurries nothing. Nine
// missed webhooks found are no rate; ten are.
func TestEvidenceHurriesRecentOrders(t *testing.T) {
	t.Parallel()
	r := newPromiseRig(t)
	ctx := context.Background()
	old := r.createMirrored(t, 30, 0)
	r.hurryPhase(t, 10*time.Minute)
	recent := r.createMirrored(t, 20, 0)
	r.hurryPhase(t, 80*time.Second)
	// The recent orders are paid, their webhooks lost.
	for _, c := range recent {
		if _, err := r.sim.Apply(c, sim.ActionPay, &sim.DefaultBuyer); err != nil {
			t.Fatal(err)
		}
	}
	r.clock.advance(10 * time.Second)
	evidenceAt := r.clock.now()
	if err := r.rec.Tighten(ctx, evidenceAt, "reconciler_start"); err != nil {
		t.Fatal(err)
	}
	checks, changed := r.hurryPhase(t, time.Minute)
	for _, c := range recent {
		if changed[c].IsZero() {
			t.Errorf("payment of %s, active 90s before a restart, not mirrored within a minute of it", c)
		}
	}
	oldChecked := 0
	for _, c := range old {
		oldChecked += checks[c]
	}
	// Each old order is checked every 4m20s on its own: about a quarter
	// of them in a minute.
	if oldChecked > len(old)/2 {
		t.Errorf("%d checks of %d orders active 11 minutes before the restart in the minute after it: hurried, want about a quarter", oldChecked, len(old))
	}
	checks, _ = r.hurryPhase(t, 2*time.Minute)
	for _, c := range recent {
		if checks[c] > 1 {
			t.Errorf("%s checked %d times in the 2 minutes after its hurried check, want at most one (15 s after the change it found, then every 4m20s): the schedule relaxes", c, checks[c])
		}
	}
	// A second restart 3 minutes after the first hurries nothing: the
	// recent orders' next checks stay 4m20s after their last.
	if err := r.rec.Tighten(ctx, r.clock.now(), "reconciler_start"); err != nil {
		t.Fatal(err)
	}
	checks, _ = r.hurryPhase(t, time.Minute)
	for _, c := range recent {
		if checks[c] > 0 {
			t.Errorf("%s checked in the minute after a second restart within %s of the first: hurried again", c, worker.HurryWindow)
		}
	}

	// Past HurryWindow: missed webhooks found at a rate hurry too.
	r.hurryPhase(t, worker.HurryWindow)
	more := r.createMirrored(t, 20, 0)
	r.hurryPhase(t, 80*time.Second)
	for _, c := range more {
		if _, err := r.sim.Apply(c, sim.ActionPay, &sim.DefaultBuyer); err != nil {
			t.Fatal(err)
		}
	}
	r.clock.advance(10 * time.Second)
	for range 9 {
		if err := r.rec.Tighten(ctx, r.clock.now(), "missed_webhook"); err != nil {
			t.Fatal(err)
		}
	}
	_, changed = r.hurryPhase(t, time.Minute)
	for _, c := range more {
		if !changed[c].IsZero() {
			t.Errorf("payment of %s mirrored within a minute of 9 missed webhooks: hurried, want no rate yet", c)
		}
	}
	if err := r.rec.Tighten(ctx, r.clock.now(), "missed_webhook"); err != nil {
		t.Fatal(err)
	}
	_, changed = r.hurryPhase(t, time.Minute)
	for _, c := range more {
		if changed[c].IsZero() {
			t.Errorf("payment of %s not mirrored within a minute of the 10th missed webhook", c)
		}
	}
}

// TestHurryLeavesRoomForDueChecks: a hurry of more recent orders than the
// budget checks in half a minute (600 after a restart, 100 s of the
// budget) takes the most recently active of them, so a check that comes
// due after it waits behind it for at most half a minute: here a payment
// made right after the restart, its webhook lost, on the dense schedule's
// first check 15 s after the order's activity. Hurrying all 600 held that
// check for 100 s.
func TestHurryLeavesRoomForDueChecks(t *testing.T) {
	t.Parallel()
	r := newPromiseRig(t)
	ctx := context.Background()
	r.createMirrored(t, 600, 0)
	// Their first checks are spread from 1 minute to 4m20s on; some are made.
	r.hurryPhase(t, 80*time.Second)
	if err := r.rec.Tighten(ctx, r.clock.now(), "reconciler_start"); err != nil {
		t.Fatal(err)
	}
	late := r.createMirrored(t, 1, 0)[0]
	if _, err := r.sim.Apply(late, sim.ActionPay, &sim.DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	paidAt := r.clock.now()
	_, changed := r.hurryPhase(t, 2*time.Minute)
	if changed[late].IsZero() {
		t.Fatalf("payment of %s, made right after a restart that hurried 600 orders, not mirrored within 2 minutes", late)
	}
	if took := changed[late].Sub(paidAt); took > 50*time.Second {
		t.Errorf("payment of %s mirrored %s after it, want within 50 s: its check, due 15 s after the order's activity, waited behind the hurry", late, took)
	}
}
