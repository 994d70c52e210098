package worker

import (
	"context"
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
)

var evidenceKinds = []string{evidenceMissedWebhook, evidenceReceiverAway, evidenceUnavailable, evidenceAllRefused}

// DefaultEvidenceWindow is how far back from the evidence an order's last
// activity may be for the order to count as possibly affected: a webhook
// is lost for an order that changes, and an order active in the last two
// hours is the likeliest to change next. Orders active in the last hour
// are checked densely anyway, so this doubles the dense tier at most.
const DefaultEvidenceWindow = 2 * time.Hour

// DefaultEvidenceHold is how long the account's record must stay clean
// before the schedule relaxes: long enough for every affected order to be
// checked about 14 times, short enough that one lost webhook does not
// double the spending for the rest of the day.
const DefaultEvidenceHold = time.Hour

// evidence is what the reconciler knows of an account's lost webhooks.
type evidence struct {
	mu sync.Mutex
	// tightUntil is when the schedule relaxes unless more evidence comes;
	// while it has not passed, orders active within window before the
	// last evidence are checked at most CheckActiveInterval apart.
	tightUntil   time.Time
	lastEvidence time.Time
	window       time.Duration
	// catchUp holds the orders pulled forward after the receivers were
	// away, until their checks are made.
	catchUp map[string]bool
	// handledUntil: receiver gaps that ended at or before it are caught up.
	handledUntil time.Time
	// counts are each receiver's counts at the last look.
	counts map[string]ordersync.WebhookCounts
}

// tight reports whether the schedule is tightened at now for an order last
// active at activeAt.
func (e *evidence) tight(now, activeAt time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return now.Before(e.tightUntil) && !activeAt.Before(e.lastEvidence.Add(-e.window))
}

// Tighten takes evidence that webhooks of the account may have been lost
// (kind names it): the open orders active within EvidenceWindow before now
// are due at once, most recently active first (unless the schedule is
// tight already: they are checked densely then), and while the record has
// not been clean for EvidenceHold, every order active within EvidenceWindow
// before the latest evidence is checked at most CheckActiveInterval apart.
func (r *Reconciler) Tighten(ctx context.Context, now time.Time, kind string) error {
	r.evidenceSeen.WithLabelValues(kind).Inc()
	e := &r.ev
	e.mu.Lock()
	fresh := !now.Before(e.tightUntil)
	e.tightUntil, e.lastEvidence, e.window = now.Add(r.cfg.EvidenceHold), now, r.cfg.EvidenceWindow
	since := now.Add(-r.cfg.EvidenceWindow)
	e.mu.Unlock()
	if !fresh || r.cfg.Schedule == nil {
		return nil
	}
	codes, err := r.cfg.Schedule.PullChecks(ctx, r.cfg.Account, since, now, ordersync.CheckActiveInterval)
	if err != nil {
		return err
	}
	r.cfg.Logger.Warn("webhooks may have been lost: checking the orders active lately densely until the record is clean",
		"evidence", kind, "orders", len(codes), "active_since", since, "hold", r.cfg.EvidenceHold)
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
	// Gaps: a receiver started after every earlier one had stopped beating.
	var gaps [][2]time.Time
	var covered time.Time
	for i, b := range beats {
		if i > 0 && b.StartedAt.After(covered.Add(grace)) && b.StartedAt.After(e.handledUntil) {
			gaps = append(gaps, [2]time.Time{covered, b.StartedAt})
		}
		if b.BeatAt.After(covered) {
			covered = b.BeatAt
		}
	}
	for _, g := range gaps {
		e.handledUntil = g[1]
	}
	if e.handledUntil.IsZero() {
		e.handledUntil = now
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
		codes, err := r.cfg.Schedule.PullChecks(ctx, r.cfg.Account, g[0].Add(-ordersync.CheckActiveWindow), now, ordersync.CheckActiveInterval)
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
