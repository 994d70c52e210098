package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/ordersync/ordersync"
)

// heartbeatRetention is how long beats are kept: longer than any gap the
// reconciler looks back on.
const heartbeatRetention = 24 * time.Hour

// Counts returns, per account, the webhooks answered since the receiver
// started: accepted (2xx: made durable, a duplicate, or ignored), answered
// 503, and refused (signature, body or size).
func (rc *Receiver) Counts() map[string]ordersync.WebhookCounts {
	out := make(map[string]ordersync.WebhookCounts, len(rc.accounts))
	for name, a := range rc.accounts {
		n := func(o outcome) int64 { return a.counts[o].Load() }
		out[name] = ordersync.WebhookCounts{
			Accepted:    n(outcomeAccepted) + n(outcomeDuplicate) + n(outcomeIgnored),
			Unavailable: n(outcomeUnavailable) + n(outcomeBusy),
			Refused:     n(outcomeUnauthorized) + n(outcomeBadRequest) + n(outcomeTooLarge),
		}
	}
	return out
}

// Heartbeat records the receiver's uptime and counts in the mirror every
// interval until ctx ends, so a reconciler in any process, or after a
// restart, knows when no receiver was listening (ordersync.ReceiverBeat).
func (rc *Receiver) Heartbeat(ctx context.Context, beats ordersync.ReceiverHeartbeats, interval time.Duration) {
	if interval <= 0 {
		interval = ordersync.DefaultHeartbeatInterval
	}
	id := newReceiverID()
	started := rc.cfg.Clock()
	if _, err := beats.PruneReceiverBeats(ctx, started.Add(-heartbeatRetention)); err != nil && ctx.Err() == nil {
		rc.logger.Warn("prune old receiver heartbeats", "err", err)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		now := rc.cfg.Clock()
		var rows []ordersync.ReceiverBeat
		for account, c := range rc.Counts() {
			rows = append(rows, ordersync.ReceiverBeat{ReceiverID: id, Account: account, StartedAt: started, BeatAt: now, WebhookCounts: c})
		}
		if err := beats.RecordReceiverBeats(ctx, rows); err != nil && ctx.Err() == nil {
			rc.logger.Warn("record the receiver's heartbeat", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// newReceiverID names a receiver process's heartbeat rows.
func newReceiverID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
