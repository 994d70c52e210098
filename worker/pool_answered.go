package worker

// Webhooks a fetch already answered: the service sends a webhook after the
// change, so a fetch whose request left after the webhook was received saw
// the change (or a later state), and the webhook needs no request of its
// own. And a webhook late for a change a check already mirrored is evidence
// that the account's webhooks are not arriving as they should.

import (
	"context"
	"errors"
	"slices"

	"github.com/ordersync/ordersync"
)

// evidenceLateWebhook: a webhook arrived for an order whose announced
// status a reconciler check had mirrored before it.
const evidenceLateWebhook = "late_webhook"

// skipAnswered acknowledges r's events without a fetch when every one of
// them is a webhook received before the request of the order's last
// applied fetch left, and reports a late webhook as evidence. It returns
// false, and r is fetched, whenever that is not certain: an event that is
// not a webhook or has no receipt time, an order the mirror has not
// fetched, a failed read, or an event that joined r during the read.
func (p *Pool) skipAnswered(ctx context.Context, r *round) bool {
	if p.lastFetches == nil {
		return false
	}
	p.mu.Lock()
	items := slices.Clone(r.items)
	p.mu.Unlock()
	for _, it := range items {
		if (it.ev.Cause != "" && it.ev.Cause != ordersync.CauseWebhook) || it.ev.ReceivedAt.IsZero() {
			return false
		}
	}
	lf, err := p.lastFetches.LastFetch(ctx, r.key.account, r.key.code)
	if err != nil {
		if !errors.Is(err, ordersync.ErrNotFound) && ctx.Err() == nil {
			p.log.Warn("read the order's last fetch failed; fetching it", "order_code", r.key.code, "err", err)
		}
		return false
	}
	p.lateWebhooks(ctx, r.key.account, items, lf)
	for _, it := range items {
		if !it.ev.ReceivedAt.Before(lf.At) {
			return false
		}
	}
	p.mu.Lock()
	joined := len(r.items) != len(items)
	r.started = !joined
	p.mu.Unlock()
	if joined {
		return false
	}
	p.metrics.answered.Add(float64(len(items)))
	p.commits <- commitItem{answered: items}
	return true
}

// lateWebhooks calls the account's evidence hook once when one of items
// announces the status that a reconciler check mirrored before the webhook
// was received.
func (p *Pool) lateWebhooks(ctx context.Context, account string, items []*item, lf ordersync.LastFetch) {
	if p.cfg.Evidence == nil || lf.ChangeCause != ordersync.CauseReconcile {
		return
	}
	for _, it := range items {
		implied, ok := it.e.Type.ImpliedStatus()
		if ok && implied == lf.Status && it.ev.ReceivedAt.After(lf.ChangedAt) {
			p.log.Info("a webhook arrived for a change a check had already mirrored",
				"msg_id", it.ev.MsgID, "order_code", it.code, "status", lf.Status, "checked_at", lf.ChangedAt, "received_at", it.ev.ReceivedAt)
			if err := p.cfg.Evidence(ctx, account, p.now(), evidenceLateWebhook); err != nil && ctx.Err() == nil {
				p.log.Warn("report a late webhook as evidence failed", "err", err)
			}
			return
		}
	}
}

func answeredRecords(items []*item) []ordersync.EventRecord {
	recs := make([]ordersync.EventRecord, len(items))
	for i, it := range items {
		recs[i] = eventRecord(it, ordersync.OutcomeAlreadyFetched)
	}
	return recs
}
