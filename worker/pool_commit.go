package worker

// The group commit: fetched orders and their event log rows go to the
// mirror in batches, one transaction each, before their queued events settle.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/batch"
)

// commitItem is a fetched order with its queued events, an ignored event to
// log, or events a fetch already answered (skipAnswered), on its way to the
// group commit.
type commitItem struct {
	params   ordersync.ApplyParams
	items    []*item
	ignored  *item
	answered []*item
	// trace is the fetch span's traceparent, which the apply continues.
	trace string
}

// commitLoop groups fetched orders into mirror transactions: a batch is
// written when it holds BatchSize orders or its first one has waited
// CommitDelay.
func (p *Pool) commitLoop(ctx context.Context) {
	var batch []commitItem
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		if len(batch) == 0 {
			ci, ok := <-p.commits
			if !ok {
				return
			}
			batch = append(batch, ci)
			t.Reset(p.cfg.CommitDelay)
		}
		for len(batch) < p.cfg.BatchSize {
			select {
			case ci, ok := <-p.commits:
				if !ok {
					p.commit(ctx, batch)
					return
				}
				batch = append(batch, ci)
				continue
			case <-t.C:
			}
			break
		}
		t.Stop()
		p.commit(ctx, batch)
		clear(batch)
		batch = batch[:0]
	}
}

// commit writes one batch and then, never before, acknowledges its
// queued events.
func (p *Pool) commit(ctx context.Context, batch []commitItem) {
	var (
		params  []ordersync.ApplyParams
		applied []commitItem
		ignored []*item
		logged  []ordersync.EventRecord
	)
	for _, ci := range batch {
		if ci.ignored != nil {
			ignored = append(ignored, ci.ignored)
			logged = append(logged, ignoredRecords([]*item{ci.ignored})...)
			continue
		}
		if ci.answered != nil {
			ignored = append(ignored, ci.answered...)
			logged = append(logged, answeredRecords(ci.answered)...)
			continue
		}
		params = append(params, ci.params)
		applied = append(applied, ci)
	}
	if len(params) > 0 {
		spans := startApplies(ctx, p.cfg.Tracer, applied, params)
		results, err := p.writer.apply(ctx, params)
		endSpans(spans, len(results), err)
		if err != nil {
			p.quiet.Log(slog.LevelError, "commit", "mirror commit failed; its events will be retried", "orders", len(params), "err", err)
			for _, ci := range applied {
				for _, it := range ci.items {
					p.retryLater(it)
				}
			}
		} else {
			p.afterApply(ctx, applied, results)
		}
	}
	// Ignored events and those a fetch already answered only need their
	// event log rows.
	if len(ignored) > 0 {
		if err := p.mirror.RecordEvents(ctx, logged); err != nil {
			p.quiet.Log(slog.LevelError, "log events", "log events that need no fetch failed; they will be retried", "events", len(ignored), "err", err)
			for _, it := range ignored {
				p.retryLater(it)
			}
		} else {
			for _, it := range ignored {
				p.ack(it)
			}
		}
	}
}

// afterApply does what follows a committed batch: metrics, hooks, acks.
func (p *Pool) afterApply(ctx context.Context, applied []commitItem, results []ordersync.ApplyResult) {
	now := p.now()
	for i, ci := range applied {
		r := results[i]
		if r.Applied && !r.Created && r.From != r.Status && hasCause(ci.items, ordersync.CauseReconcile) {
			p.syncerFor(ci.params.Account).RecordDrift(driftMissedWebhook)
			p.log.Info("reconcile found a status change no webhook announced",
				"order_code", ci.params.Order.OrderCode, "from", r.From, "to", r.Status)
		}
		if r.Created && p.cfg.OnOrdersKnown != nil {
			o := ci.params.Order
			ref := ordersync.OrderRef{Account: ci.params.Account, Code: o.OrderCode, ID: o.OrderID, Reference: o.OrderReference}
			select {
			case p.known <- ref:
			case <-ctx.Done():
			}
		}
		for _, it := range ci.items {
			if !it.ev.ReceivedAt.IsZero() {
				p.metrics.syncLag.Observe(now.Sub(it.ev.ReceivedAt).Seconds())
			}
		}
	}
	if p.cfg.OnApplied != nil {
		p.cfg.OnApplied(results)
	}
	for _, ci := range applied {
		for _, it := range ci.items {
			p.ack(it)
		}
	}
}

// knownLoop calls OnOrdersKnown off the commit path, with every order that
// became known since its previous call (at most knownBatch).
func (p *Pool) knownLoop(ctx context.Context) {
	batch.Drain(p.known, knownBatch, func(refs []ordersync.OrderRef) { p.cfg.OnOrdersKnown(ctx, refs) })
}

// causeOf is why a round's fetch happened: a webhook, unless every event
// had another cause.
func causeOf(items []*item) ordersync.Cause {
	cause := items[0].ev.Cause
	for _, it := range items {
		if it.ev.Cause == "" || it.ev.Cause == ordersync.CauseWebhook {
			return ordersync.CauseWebhook
		}
	}
	return cause
}

func hasCause(items []*item, c ordersync.Cause) bool {
	return slices.ContainsFunc(items, func(it *item) bool { return it.ev.Cause == c })
}

// eventRecords are the event log rows of a round's events, in order of
// receipt, so the last one becomes the order's last event.
func eventRecords(items []*item, code string) []ordersync.EventRecord {
	recs := make([]ordersync.EventRecord, len(items))
	for i, it := range items {
		recs[i] = eventRecord(it, ordersync.OutcomeSynced)
		recs[i].OrderCode = code
	}
	slices.SortStableFunc(recs, func(a, b ordersync.EventRecord) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	return recs
}

func ignoredRecords(items []*item) []ordersync.EventRecord {
	recs := make([]ordersync.EventRecord, len(items))
	for i, it := range items {
		recs[i] = eventRecord(it, ordersync.OutcomeIgnored)
		recs[i].Detail = string(it.ev.Ignored)
	}
	return recs
}

func eventRecord(it *item, outcome ordersync.EventOutcome) ordersync.EventRecord {
	rec := ordersync.EventRecord{
		MsgID:      it.ev.MsgID,
		Account:    it.account,
		ReceivedAt: it.ev.ReceivedAt,
		Signature:  it.ev.Signature,
		Outcome:    outcome,
		OrderCode:  it.code,
	}
	// The queue gives every event a receipt time that a redelivery keeps
	// (the receiver's, else the stream's), which the event log's key
	// needs; only an event from elsewhere has none.
	if rec.ReceivedAt.IsZero() {
		rec.ReceivedAt = it.pulledAt
	}
	if it.e != nil {
		rec.Type, rec.OrderType = it.e.Type, it.e.OrderType
		rec.OrderID, rec.OrderReference = it.e.OrderID, it.e.OrderReference
		if rec.OrderCode == "" {
			rec.OrderCode = it.e.OrderCode
		}
	}
	return rec
}

// eventHeaders keeps what the receiver knew about an event alongside its
// dead letter.
func eventHeaders(ev *ordersync.InboundEvent) map[string]string {
	h := map[string]string{"signature": string(ev.Signature)}
	if !ev.ReceivedAt.IsZero() {
		h["received_at"] = ev.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	if ev.Cause != "" {
		h["cause"] = string(ev.Cause)
	}
	if ev.ReplayOf != 0 {
		h["replay_of"] = fmt.Sprint(ev.ReplayOf)
	}
	return h
}
