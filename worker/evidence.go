package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Evidence that webhooks of an account may have been lost, the reasons
// of the reconciler's log lines and of ordersync_reconcile_evidence_total.
const (
	evidenceMissedWebhook = "missed_webhook"
	evidenceReceiverAway  = "receiver_away"
	evidenceUnavailable   = "receiver_unavailable"
	evidenceAllRefused    = "all_refused"
	// evidenceStart: a reconciler started (took the lease) and has no
	// clean record yet.
	evidenceStart = "reconciler_start"
)

var evidenceKinds = []string{evidenceMissedWebhook, evidenceReceiverAway, evidenceUnavailable, evidenceAllRefused, evidenceStart, evidenceLateWebhook}

// DefaultEvidenceWindow is how far back from the evidence an order's last
// activity may be for the order to count as possibly affected: the orders
// of the 5-minute promise, those active in the last hour. Any older open
// order keeps its 1-hour promise through its quiet checks, evidence or
// not, so checking it densely too would spend the merchant's budget on a
// promise already kept. A longer window, a setting, trades requests (about
// 14 an hour for each quiet order it adds while the evidence holds) for
// finding a quiet order's lost change within minutes instead of the hour.
const DefaultEvidenceWindow = ordersync.CheckActiveWindow

// DefaultEvidenceHold is how long the account's record must stay clean
// before the schedule relaxes: long enough for every affected order to be
// checked about 7 times, short enough that the orders dense when the
// evidence stops do not spend the quiet tier's budget for long past their
// active hour (docs/reconciler.md has the promise run's figures).
const DefaultEvidenceHold = 30 * time.Minute

// The hurry: evidence that webhooks are being lost now (missed webhooks
// found at a rate, a restart, webhooks refused) makes the account's
// recently active orders due within a minute, instead of at the dense
// schedule's next check, up to 4m20s on. A webhook lost now is most likely
// one of an order active now: a buyer who opened the link minutes ago.
const (
	// HurryWindow is how recently active an order must be to be hurried,
	// and the least time between two hurries of an account: every order
	// is hurried at most once for one activity.
	HurryWindow = 5 * time.Minute
	// hurryWithin is when the hurried orders are due: now, or a minute
	// after their last fetch when that is later.
	hurryWithin = time.Minute
	// hurryMissed is how many missed webhooks found within HurryWindow
	// make a rate: a single one may be a webhook the provider never sent.
	hurryMissed = 10
	// hurryShare is the share of the budget's hurryWithin that a hurry
	// may add: at most that many orders, the most recently active, are
	// hurried (180 at the default budget), and the reconciler spends as
	// many checks more over hurryWithin (allowHurry: 3 a second at the
	// default). The hurried checks are due at once, ahead of every check
	// the schedule brings due after them, so the checks that come due
	// meanwhile (the dense schedule's first checks, 15 s after each
	// activity) wait about 20 s behind them, and the extra then catches
	// them up, instead of waiting as long as the budget takes to check
	// every recent order (800 after a restart in the chaos run, 134 s at
	// 6 a second). The orders past it are on the dense schedule already.
	hurryShare = 0.5
)

// hurryLimit is how many orders one hurry makes due: hurryShare of what
// the budget checks within hurryWithin, at least one.
func hurryLimit(budget float64) int {
	return max(1, int(budget*hurryWithin.Seconds()*hurryShare))
}

// hurries says which evidence hurries: every kind but a late webhook (one
// webhook, which arrived) and a missed webhook (which hurries only at a
// rate).
func hurries(kind string) bool {
	switch kind {
	case evidenceReceiverAway, evidenceUnavailable, evidenceAllRefused, evidenceStart:
		return true
	}
	return false
}

// evidence is what the reconciler keeps of the receivers' heartbeats and
// of the orders it pulled forward. The evidence itself is in the mirror
// (ordersync.DenseChecks), where every fetch's schedule reads it.
type evidence struct {
	mu sync.Mutex
	// catchUp holds the orders pulled forward after the receivers were
	// away, until their checks are made.
	catchUp map[string]bool
	// handledUntil: receiver gaps that ended at or before it are caught up.
	handledUntil time.Time
	// counts are each receiver's counts at the last look.
	counts map[string]ordersync.WebhookCounts
	// missed are when missed webhooks were found, within HurryWindow;
	// hurriedAt is the account's last hurry.
	missed    []time.Time
	hurriedAt time.Time
}

// hurryDue says whether evidence of kind at now hurries the account, and
// takes the hurry if it does.
func (e *evidence) hurryDue(kind string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if kind == evidenceMissedWebhook {
		cut := 0
		for cut < len(e.missed) && now.Sub(e.missed[cut]) >= HurryWindow {
			cut++
		}
		e.missed = append(e.missed[cut:], now)
	}
	if !hurries(kind) && len(e.missed) < hurryMissed {
		return false
	}
	if !e.hurriedAt.IsZero() && now.Sub(e.hurriedAt) < HurryWindow {
		return false
	}
	e.hurriedAt = now
	e.missed = nil
	return true
}

// Tighten takes evidence that webhooks of the account may have been lost
// (kind names it): it records in the mirror that the account's open
// orders active within EvidenceWindow before now are on the dense schedule
// (ordersync.DenseChecks) until EvidenceHold after now, and brings their
// next checks to it. Every fetch of those orders, by a webhook or a
// check, in any process, then sets the next check densely, until the
// record has been clean for EvidenceHold. Evidence that webhooks are being
// lost now (hurries, or missed webhooks at a rate) also makes the orders
// active within HurryWindow due within a minute, the most recently active
// first and at most hurryLimit of them, at most once per HurryWindow.
func (r *Reconciler) Tighten(ctx context.Context, now time.Time, kind string) error {
	r.evidenceSeen.WithLabelValues(kind).Inc()
	if r.cfg.Schedule == nil {
		return nil
	}
	dense := ordersync.DenseChecks{Since: now.Add(-r.cfg.EvidenceWindow), Until: now.Add(r.cfg.EvidenceHold)}
	n, err := r.cfg.Schedule.TightenChecks(ctx, r.cfg.Account, dense, now)
	if err != nil {
		return fmt.Errorf("tighten the schedule of %s: %w", r.cfg.Account, err)
	}
	if n > 0 {
		r.cfg.Logger.Warn("webhooks may have been lost: checking the orders active lately densely until the record is clean",
			"evidence", kind, "orders_brought_nearer", n, "active_since", dense.Since, "until", dense.Until)
	}
	if !r.ev.hurryDue(kind, now) {
		return nil
	}
	codes, err := r.cfg.Schedule.PullChecks(ctx, r.cfg.Account, now.Add(-HurryWindow), now, hurryWithin, hurryLimit(r.cfg.Budget))
	if err != nil {
		return fmt.Errorf("hurry the checks of %s: %w", r.cfg.Account, err)
	}
	if len(codes) > 0 {
		r.allowHurry(len(codes))
		r.cfg.Logger.Warn("webhooks are being lost: checking the orders active in the last minutes within a minute",
			"evidence", kind, "orders", len(codes), "active_since", now.Add(-HurryWindow))
	}
	return nil
}

// ObserveReceivers reads the receivers' heartbeats and takes what they say
// as evidence: a gap in their uptime (every open order active in the hour
// before it is checked at once, most recently active first), a receiver
// answering 503, or one refusing every webhook while it accepts none.
// Signature failures alone, while valid webhooks keep arriving, are a
// stranger's noise and say nothing.
func (r *Reconciler) ObserveReceivers(ctx context.Context, now time.Time) error {
	if r.cfg.Heartbeats == nil {
		return nil
	}
	grace := 3 * r.cfg.HeartbeatInterval
	beats, err := r.cfg.Heartbeats.ListReceiverBeats(ctx, r.cfg.Account, now.Add(-r.cfg.EvidenceWindow-ordersync.CheckActiveWindow))
	if err != nil || len(beats) == 0 {
		return err
	}
	e := &r.ev
	e.mu.Lock()
	// Gaps: a receiver started after every earlier one had stopped
	// beating, a restart however short (a kill, a deploy): webhooks posted
	// meanwhile were refused, and the provider may not retry them. It is
	// told once every earlier receiver has had a beat interval to show it
	// is still alive (a rolling restart of several receivers is no gap),
	// at once when they had been silent for longer than grace.
	var gaps [][2]time.Time
	var covered time.Time
	for i, b := range beats {
		if i > 0 && b.StartedAt.After(covered) && b.StartedAt.After(e.handledUntil) &&
			(b.StartedAt.After(covered.Add(grace)) || !now.Before(b.StartedAt.Add(r.cfg.HeartbeatInterval))) {
			gaps = append(gaps, [2]time.Time{covered, b.StartedAt})
		}
		if b.BeatAt.After(covered) {
			covered = b.BeatAt
		}
	}
	for _, g := range gaps {
		e.handledUntil = g[1]
	}
	away := now.After(covered.Add(grace))
	var unavailable, refused, accepted int64
	first := e.counts == nil
	if first {
		e.counts = map[string]ordersync.WebhookCounts{}
	}
	for _, b := range beats {
		if prev, ok := e.counts[b.ReceiverID]; ok || !first {
			unavailable += b.Unavailable - prev.Unavailable
			refused += b.Refused - prev.Refused
			accepted += b.Accepted - prev.Accepted
		}
		e.counts[b.ReceiverID] = b.WebhookCounts
	}
	e.mu.Unlock()

	for _, g := range gaps {
		if g[1].Sub(g[0]) <= grace {
			// A restart seconds long: the dense schedule (Tighten)
			// finds what it lost within 4m20s, without a burst of
			// checks of every recent order.
			r.cfg.Logger.Warn("a receiver restarted after the earlier ones stopped: checking the orders active lately densely",
				"gap_from", g[0], "gap_to", g[1])
			if err := r.Tighten(ctx, now, evidenceReceiverAway); err != nil {
				return err
			}
			continue
		}
		codes, err := r.cfg.Schedule.PullChecks(ctx, r.cfg.Account, g[0].Add(-ordersync.CheckActiveWindow), now, ordersync.CheckActiveInterval, 0)
		if err != nil {
			return err
		}
		e.mu.Lock()
		if e.catchUp == nil {
			e.catchUp = map[string]bool{}
		}
		for _, c := range codes {
			e.catchUp[c] = true
		}
		e.mu.Unlock()
		r.cfg.Logger.Warn("no receiver was listening: checking at once every open order active in the hour before the gap",
			"gap_from", g[0], "gap_to", g[1], "orders", len(codes))
		if err := r.Tighten(ctx, now, evidenceReceiverAway); err != nil {
			return err
		}
	}
	switch {
	case away:
		return r.Tighten(ctx, now, evidenceReceiverAway)
	case unavailable > 0:
		return r.Tighten(ctx, now, evidenceUnavailable)
	case refused > 0 && accepted == 0:
		return r.Tighten(ctx, now, evidenceAllRefused)
	}
	return nil
}
