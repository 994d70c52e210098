package worker

// Webhooks a fetch already answered: the service sends a webhook after the
// change, so a fetch whose request left after the webhook was received saw
// the change (or a later state), and the webhook needs no request of its
// own. And a webhook late for a change a check already mirrored is evidence
// that the account's webhooks are not arriving as they should.

import (
	"context"
	"slices"

	"github.com/ordersync/ordersync"
)

// evidenceLateWebhook: a webhook arrived for an order whose announced
// status a reconciler check had mirrored before it.
const evidenceLateWebhook = "late_webhook"

// readLastFetches reads, with one read of the mirror per account, the last
// applied fetches of the orders of items that a fetch may have answered
// (webhooks with a receipt time), and keeps each on its item for
// skipAnswered. An order the mirror holds no fetch of, or a failed read,
// leaves the item without one: it is fetched.
func (p *Pool) readLastFetches(ctx context.Context, items []*item) {
	byAccount := map[string][]*item{}
	for _, it := range items {
		if answerable(it) {
			byAccount[it.account] = append(byAccount[it.account], it)
		}
	}
	for account, its := range byAccount {
		codes := make([]string, 0, len(its))
		for _, it := range its {
			codes = append(codes, it.code)
		}
		lfs, err := p.mirror.LastFetches(ctx, account, codes)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("read the orders' last fetches failed; fetching them", "orders", len(codes), "err", err)
			}
			continue
		}
		for _, it := range its {
			if lf, ok := lfs[it.code]; ok {
				it.last = &lf
			}
		}
	}
}

// answerable says whether a fetch sent after it was received answers it:
// a webhook with a receipt time.
func answerable(it *item) bool {
	return (it.ev.Cause == "" || it.ev.Cause == ordersync.CauseWebhook) && !it.ev.ReceivedAt.IsZero()
}

// skipAnswered acknowledges r's events without a fetch when every one of
// them is a webhook received before the request of the order's last
// applied fetch left, as the mirror held it when they were pulled (the
// newest of their reads: the mirror never moves backwards), and reports a
// late webhook as evidence. It returns false, and r is fetched, whenever
// that is not certain: an event that is not a webhook or has no receipt
// time, or an order the mirror had not fetched.
func (p *Pool) skipAnswered(ctx context.Context, r *round) bool {
	p.mu.Lock()
	items := slices.Clone(r.items)
	var lf *ordersync.LastFetch
	for _, it := range items {
		if !answerable(it) {
			p.mu.Unlock()
			return false
		}
		if it.last != nil && (lf == nil || it.last.At.After(lf.At)) {
			lf = it.last
		}
	}
	answered := lf != nil
	for _, it := range items {
		answered = answered && it.ev.ReceivedAt.Before(lf.At)
	}
	// Marked started under the same lock, so that no event joins a round
	// found answered without it.
	if answered {
		r.started = true
	}
	p.mu.Unlock()
	if lf == nil {
		return false
	}
	p.lateWebhooks(ctx, r.key.account, items, *lf)
	if !answered {
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
