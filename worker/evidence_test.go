package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// withHeartbeats gives the rig a new reconciler, as after a restart, that
// reads the receivers' heartbeats from the mirror; it returns its registry.
func (r *promiseRig) withHeartbeats(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	var err error
	if r.rec, err = worker.NewReconciler(worker.ReconcilerConfig{
		Schedule: r.db, Syncer: r.syncer, Heartbeats: r.db, Clock: r.clock.now, Registerer: reg,
	}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// beat records a receiver's heartbeat at the simulated time.
func (r *promiseRig) beat(t *testing.T, id string, started time.Time, c ordersync.WebhookCounts) {
	t.Helper()
	if err := r.db.RecordReceiverBeats(context.Background(), []ordersync.ReceiverBeat{{
		ReceiverID: id, Account: ordersync.DefaultAccount, StartedAt: started, BeatAt: r.clock.now(), WebhookCounts: c,
	}}); err != nil {
		t.Fatal(err)
	}
}

// TestReceiverOutageIsCaughtUp: the service (receiver and reconciler) is
// down for 10 minutes while orders change upstream, their webhooks lost.
// When it comes back, the gap in the receivers' uptime recorded in the
// mirror makes the restarted reconciler check at once every order active
// in the hour before the gap (catch_up), and densely after: every change
// made during the outage to those orders is mirrored within 5 minutes of
// the service coming back. Orders active longer before the gap are
// outside the evidence window: they are neither caught up nor checked
// densely, and keep the 1-hour promise through their quiet checks.
func TestReceiverOutageIsCaughtUp(t *testing.T) {
	t.Parallel()
	r := newPromiseRig(t)
	ctx := context.Background()
	started := r.clock.now()
	r.beat(t, "r1", started, ordersync.WebhookCounts{})
	quiet := r.createMirrored(t, 40, 0) // active 100 minutes before the outage
	for range 70 * 60 {
		r.second(t)
	}
	recent := r.createMirrored(t, 40, 0) // active 30 minutes before it
	for range 30 * 60 {
		r.second(t)
	}
	r.beat(t, "r1", started, ordersync.WebhookCounts{Accepted: 80})
	outage := r.clock.now()
	// Down for 10 minutes: no beat, no check; half the orders change.
	changedAt := map[string]time.Time{}
	for i, codes := range [][]string{quiet, recent} {
		for j, code := range codes[:20] {
			r.clock.advance(20 * time.Second)
			action := sim.ActionPay
			if j < 10 {
				action = sim.ActionCancel
			}
			if _, err := r.sim.Apply(code, action, nil); err != nil {
				t.Fatalf("group %d: %v", i, err)
			}
			changedAt[code] = r.clock.now()
		}
	}
	r.clock.advance(outage.Add(10 * time.Minute).Sub(r.clock.now()))
	back := r.clock.now()
	r.beat(t, "r2", back, ordersync.WebhookCounts{})
	reg := r.withHeartbeats(t)
	if err := r.rec.ObserveReceivers(ctx, back); err != nil {
		t.Fatal(err)
	}
	isQuiet := map[string]bool{}
	for _, c := range quiet {
		isQuiet[c] = true
	}
	// quietReasons: why the quiet orders were checked until a check
	// mirrored their change (after it, they are active again).
	quietReasons := map[ordersync.CheckReason]int{}
	mirrored := map[string]bool{}
	var recentLatest, quietLatest time.Duration
	for r.clock.now().Sub(back) < time.Hour && len(changedAt) > 0 {
		rep := r.second(t)
		for _, c := range rep.Scheduled {
			if isQuiet[c.OrderCode] && !mirrored[c.OrderCode] {
				quietReasons[c.Reason]++
			}
		}
		for _, c := range rep.Changed {
			at, ok := changedAt[c.OrderCode]
			if !ok {
				continue
			}
			delete(changedAt, c.OrderCode)
			mirrored[c.OrderCode] = true
			if isQuiet[c.OrderCode] {
				quietLatest = max(quietLatest, r.clock.now().Sub(at))
			} else {
				recentLatest = r.clock.now().Sub(back)
			}
		}
	}
	if len(changedAt) > 0 {
		t.Errorf("%d changes made during the outage not mirrored within an hour of the service coming back", len(changedAt))
	}
	if recentLatest > 5*time.Minute {
		t.Errorf("the last change made during the outage to an order active in the hour before it was mirrored %s after the service came back, over 5m", recentLatest)
	}
	if quietLatest > time.Hour {
		t.Errorf("a change made during the outage to an order active 100 minutes before it was mirrored %s after it was made, over 1h", quietLatest)
	}
	if got := r.byReason[ordersync.CheckCatchUp]; got != len(recent) {
		t.Errorf("%d catch-up checks, want one for each of the %d orders active in the hour before the gap", got, len(recent))
	}
	if n := quietReasons[ordersync.CheckCatchUp] + quietReasons[ordersync.CheckEvidence]; n > 0 {
		t.Errorf("orders active 100 minutes before the outage checked for catch-up or evidence before their change was mirrored (%v), want only their quiet checks: they are outside the evidence window", quietReasons)
	}
	if got := counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "receiver_away"}); got < 1 {
		t.Errorf("receiver_away evidence %v, want counted", got)
	}
	t.Logf("changes made during a 10-minute outage: of orders active in the hour before it, the last mirrored %s after the service came back; of orders active 100 minutes before it, the slowest %s after it was made; checks by reason: %v (of the quiet orders, until their change was mirrored: %v)", recentLatest, quietLatest, r.byReason, quietReasons)
}

// TestMissedWebhookTightensTheAccount: a check finding a change no webhook
// announced puts the account's orders active in the hour before it on the
// dense schedule: they are checked every 4m20s past their active hour, an
// order that becomes active meanwhile is first checked 15 s after its
// activity, orders active longer before are not touched, and the schedule
// relaxes once the record has been clean for an hour. Refused signatures
// alone, while valid webhooks keep arriving, tighten nothing; a receiver
// answering 503, or refusing every webhook while it accepts none, does.
func TestMissedWebhookTightensTheAccount(t *testing.T) {
	t.Parallel()
	r := newPromiseRig(t)
	ctx := context.Background()
	reg := r.withHeartbeats(t)
	started := r.clock.now()
	r.beat(t, "r1", started, ordersync.WebhookCounts{})
	if err := r.rec.ObserveReceivers(ctx, r.clock.now()); err != nil {
		t.Fatal(err)
	}
	quiet := r.createMirrored(t, 20, 0)
	for range 50 * 60 {
		r.second(t)
	}
	recent := r.createMirrored(t, 20, 0)
	for range 20 * 60 {
		r.second(t)
	}
	// Valid webhooks keep arriving among refused ones: a stranger's noise.
	r.beat(t, "r1", started, ordersync.WebhookCounts{Accepted: 10, Refused: 500})
	if err := r.rec.ObserveReceivers(ctx, r.clock.now()); err != nil {
		t.Fatal(err)
	}
	if got := r.evidence(t, reg); got != 0 {
		t.Fatalf("%v evidence from refused signatures while valid webhooks arrive, want none", got)
	}
	// phase counts the checks over d by reason, and those of each order.
	phase := func(d time.Duration) (map[ordersync.CheckReason]int, map[string]int) {
		byReason, byOrder := map[ordersync.CheckReason]int{}, map[string]int{}
		end := r.clock.now().Add(d)
		for r.clock.now().Before(end) {
			for _, c := range r.second(t).Scheduled {
				byReason[c.Reason]++
				byOrder[c.OrderCode]++
			}
		}
		return byReason, byOrder
	}
	// fewest and most are the fewest and most checks of one of codes.
	fewest := func(byOrder map[string]int, codes ...string) int {
		n := byOrder[codes[0]]
		for _, c := range codes {
			n = min(n, byOrder[c])
		}
		return n
	}
	most := func(byOrder map[string]int, codes ...string) int {
		n := 0
		for _, c := range codes {
			n = max(n, byOrder[c])
		}
		return n
	}
	// 30 minutes of a clean record: the quiet orders (active 70 minutes
	// before) once each at most, the recent ones (20) on the active tier.
	calm, calmOrders := phase(30 * time.Minute)
	if most(calmOrders, quiet...) > 1 || calm[ordersync.CheckEvidence] != 0 {
		t.Fatalf("before any evidence: %v checks, up to %d of one quiet order in 30 minutes, want at most one each and none for evidence", calm, most(calmOrders, quiet...))
	}
	// One order changes upstream, its webhook lost; its check finds it.
	// The recent orders were active 50 minutes before, the quiet ones 100.
	missed := r.createMirrored(t, 1, 0)[0]
	if _, err := r.sim.Apply(missed, sim.ActionPay, nil); err != nil {
		t.Fatal(err)
	}
	tight, tightOrders := phase(30 * time.Minute)
	if got := counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "missed_webhook"}); got != 1 {
		t.Fatalf("missed_webhook evidence %v, want 1", got)
	}
	// Dense past their active hour: every 4m20s from 50 to 80 minutes
	// after their activity, so at least 6 checks each (the tiers' schedule
	// alone: 3 or 4, the last at the hour's end, the next 52 minutes on).
	if got := fewest(tightOrders, recent...); got < 6 {
		t.Errorf("a recent order checked %d times in the 30 minutes after a missed webhook, want at least 6: %v", got, tight)
	}
	// The quiet ones, active before the evidence window, keep their quiet
	// checks.
	if got := most(tightOrders, quiet...); got > 1 {
		t.Errorf("a quiet order checked %d times in the 30 minutes after a missed webhook, want at most 1: it was active before the evidence window", got)
	}
	// While dense, an order is first checked 15 s after its activity, not
	// 1 to 4m20s after it: a change whose webhook is lost right after is
	// mirrored within about 15 s.
	fresh := r.createMirrored(t, 1, 0)[0]
	if _, err := r.sim.Apply(fresh, sim.ActionPay, nil); err != nil {
		t.Fatal(err)
	}
	activeAt := r.clock.now()
	var freshAfter time.Duration
	for freshAfter == 0 && r.clock.now().Sub(activeAt) < ordersync.CheckFirstSpread {
		for _, c := range r.second(t).Changed {
			if c.OrderCode == fresh {
				freshAfter = r.clock.now().Sub(activeAt)
			}
		}
	}
	if freshAfter == 0 || freshAfter > ordersync.CheckDenseFirst+2*time.Second {
		t.Errorf("a change lost right after activity while dense mirrored after %s (0: not within %s), want about %s", freshAfter, ordersync.CheckFirstSpread, ordersync.CheckDenseFirst)
	}
	// Clean for the hold (from the last evidence, the fresh order's
	// change): no check is made for evidence any more. Then, once the
	// fresh order's active hour is over too, relaxed: the orders the last
	// record covers (missed and fresh) back on the quiet checks, like
	// every other.
	phase(worker.DefaultEvidenceHold)
	if after, _ := phase(time.Hour - worker.DefaultEvidenceHold + time.Minute); after[ordersync.CheckEvidence] != 0 {
		t.Errorf("%d checks for evidence once the record had been clean for the hold, want none: %v", after[ordersync.CheckEvidence], after)
	}
	relaxed, relaxedOrders := phase(time.Hour)
	all := append(append([]string{missed, fresh}, quiet...), recent...)
	if relaxed[ordersync.CheckEvidence] != 0 || most(relaxedOrders, all...) > 2 {
		t.Errorf("an hour after the record came clean: %v checks, up to %d of one order (the last record's: %d, %d), want at most 2 each and none for evidence",
			relaxed, most(relaxedOrders, all...), relaxedOrders[missed], relaxedOrders[fresh])
	}
	t.Logf("before evidence (30m) %v; after a missed webhook (30m) %v, %d to %d checks of each order active 50 minutes before; relaxed (1h) %v; a change lost right after activity while dense mirrored after %s",
		calm, tight, fewest(tightOrders, recent...), most(tightOrders, recent...), relaxed, freshAfter)

	// A receiver answering 503, or refusing every webhook while it accepts
	// none, is evidence too.
	r.beat(t, "r1", started, ordersync.WebhookCounts{Accepted: 10, Refused: 500, Unavailable: 3})
	if err := r.rec.ObserveReceivers(ctx, r.clock.now()); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "receiver_unavailable"}); got != 1 {
		t.Errorf("receiver_unavailable evidence %v after 503 answers, want 1", got)
	}
	r.beat(t, "r1", started, ordersync.WebhookCounts{Accepted: 10, Refused: 520, Unavailable: 3})
	if err := r.rec.ObserveReceivers(ctx, r.clock.now()); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "all_refused"}); got != 1 {
		t.Errorf("all_refused evidence %v after refusals with nothing accepted, want 1", got)
	}
}

// evidence sums the reconciler's evidence of every kind.
func (r *promiseRig) evidence(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	var n float64
	for _, k := range []string{"missed_webhook", "receiver_away", "receiver_unavailable", "all_refused"} {
		n += counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": k})
	}
	return n
}

// TestShortRestartIsAGap: a receiver killed and restarted seconds later
// leaves a gap too short for three missed beats, in which webhooks were
// refused: it is evidence once the earlier receiver has had a beat
// interval to show it is alive. A rolling restart, the earlier receiver
// beating on after the new one started, is none.
func TestShortRestartIsAGap(t *testing.T) {
	r := newPromiseRig(t)
	ctx := context.Background()
	reg := r.withHeartbeats(t)
	away := func() float64 {
		return counterValue(t, reg, "ordersync_reconcile_evidence_total", map[string]string{"kind": "receiver_away"})
	}
	observe := func() {
		t.Helper()
		if err := r.rec.ObserveReceivers(ctx, r.clock.now()); err != nil {
			t.Fatal(err)
		}
	}
	first := r.clock.now()
	r.beat(t, "r1", first, ordersync.WebhookCounts{})
	r.clock.advance(ordersync.DefaultHeartbeatInterval)
	r.beat(t, "r1", first, ordersync.WebhookCounts{Accepted: 5})
	// Killed 3 s after its beat; the next process starts 2 s later.
	r.clock.advance(5 * time.Second)
	second := r.clock.now()
	r.beat(t, "r2", second, ordersync.WebhookCounts{})
	observe()
	if got := away(); got != 0 {
		t.Fatalf("receiver_away %v the moment a receiver started beside one that beat 5 s ago, want none yet", got)
	}
	r.clock.advance(ordersync.DefaultHeartbeatInterval)
	r.beat(t, "r2", second, ordersync.WebhookCounts{Accepted: 1})
	observe()
	if got := away(); got != 1 {
		t.Fatalf("receiver_away %v once the killed receiver missed its beat, want 1", got)
	}
	// A rolling restart: r3 starts while r2 keeps beating.
	third := r.clock.now()
	r.beat(t, "r3", third, ordersync.WebhookCounts{})
	r.clock.advance(ordersync.DefaultHeartbeatInterval)
	r.beat(t, "r2", second, ordersync.WebhookCounts{Accepted: 2})
	r.beat(t, "r3", third, ordersync.WebhookCounts{Accepted: 1})
	observe()
	if got := away(); got != 1 {
		t.Errorf("receiver_away %v after a rolling restart, want still 1", got)
	}
}
