package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// batchOrder is one order of a batch: its state and, when a newer document
// came, the last one, to be written in full.
type batchOrder struct {
	st *orderState
	// hadDetails: the order was fetched before this batch, so a new
	// document replaces its line items and metadata.
	hadDetails bool
	// stored is the order's state as read, before the batch applied, and
	// storedOrder its stored document (nil when it does not decode): what
	// its row holds, which a new document's write is compared with.
	stored      orderState
	storedOrder *ordersync.Order
	// writeItems, writeMetadata: the order's line items (metadata) are
	// written, as the order is new or they differ from the stored ones.
	writeItems, writeMetadata bool
	// synced: a newer fetch applied, so at least the bookkeeping changes.
	synced  bool
	changed bool
	order   *ordersync.Order
	doc     []byte
	hash    string
	// announced is the receipt of the earliest webhook logged for the
	// order that announced its payment, kept while it is not yet paid.
	announced *time.Time
}

// outboxEntry is a message to queue; payload is an index into
// batch.payloads, result into the ApplyOrders call's results.
type outboxEntry struct {
	key     orderKey
	msg     ordersync.OutboxMessage
	payload int
	result  int
}

// changeEntry is a document change to record: the fields that changed
// from prev (the batch's last document, else the stored one) to next,
// worked out off the writer's path by writeBatch.
type changeEntry struct {
	key   orderKey
	at    time.Time
	cause ordersync.Cause
	prev  *ordersync.Order
	next  *ordersync.Order
}

// historyEntry is a status change to record.
type historyEntry struct {
	key orderKey
	ordersync.StatusTransition
	seq   int64
	at    time.Time
	cause ordersync.Cause
}

// batch is everything one ApplyOrders call writes, gathered in memory first
// so that it can be written with a few multi-row statements.
type batch struct {
	now      time.Time
	orders   map[orderKey]*batchOrder
	keys     []orderKey // first-seen order, for deterministic writes
	history  []historyEntry
	changes  []changeEntry
	outbox   []outboxEntry
	payloads []ordersync.MirroredOrder
	// applying is the index of the params being applied, for outbox.
	applying int
	events   []ordersync.EventRecord
	// eventOrders is, for each of events, the batch's order it came with;
	// the zero key for events logged alone.
	eventOrders []orderKey
	eventAt     map[string]int // msg id → index in events
	// dense is each account's evidence of lost webhooks, for the schedule.
	dense map[string]ordersync.DenseChecks
	// announced holds, for the orders the batch may find paid for the first
	// time, the earliest receipt of a logged webhook announcing it.
	announced map[orderKey]time.Time
	// unprepared are the statements the batch ran unprepared on SQLite,
	// prepared after its commit for the batches that follow.
	unprepared []rowsKey
}

// ApplyOrders writes a batch of fetched orders, their status history,
// outbox messages and event log rows in one transaction. Params apply in
// order; one whose Seq is not above the mirror's is stale and only logs its
// events. The batch is worked out in memory against one read of the orders'
// states, then written with multi-row statements.
func (db *DB) ApplyOrders(ctx context.Context, params []ordersync.ApplyParams) ([]ordersync.ApplyResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	op := fmt.Sprintf("apply %d orders", len(params))
	if err := ordersync.ValidateApplyParams(params); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := db.prepareWrites(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var (
		results []ordersync.ApplyResult
		b       *batch
	)
	txCtx, err := db.applyContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	err = db.inTx(txCtx, op, func(tx *sqlx.Tx) error {
		ctx := txCtx
		states, err := db.lockOrderStates(ctx, tx, params)
		if err != nil {
			return err
		}
		// Sized for the usual batch up front: payloads are whole orders,
		// costly to move as the slices grow.
		n := len(params)
		b = &batch{
			now: time.Now(), orders: make(map[orderKey]*batchOrder, n), keys: make([]orderKey, 0, n),
			history: make([]historyEntry, 0, n), outbox: make([]outboxEntry, 0, 2*n), payloads: make([]ordersync.MirroredOrder, 0, n),
			events: make([]ordersync.EventRecord, 0, n), eventAt: make(map[string]int, n),
		}
		if b.announced, err = db.paymentAnnouncements(ctx, tx, params, states); err != nil {
			return err
		}
		if b.dense, err = db.batchDenseChecks(ctx, tx, params); err != nil {
			return err
		}
		results = make([]ordersync.ApplyResult, len(params))
		for i := range params {
			b.applying = i
			if results[i], err = b.apply(&params[i], states); err != nil {
				return fmt.Errorf("order %s/%s: %w", params[i].Account, params[i].Order.OrderCode, err)
			}
		}
		if err := db.previousDocuments(ctx, tx, b); err != nil {
			return err
		}
		return db.writeBatch(ctx, tx, b)
	})
	if err != nil {
		return nil, err
	}
	for i := range b.outbox {
		e := &b.outbox[i]
		results[e.result].Messages = append(results[e.result].Messages, e.msg)
	}
	db.wakeIndexer()
	db.prepareRows(ctx, b.unprepared)
	if db.indexAfterApply {
		if _, err := db.IndexNow(ctx); err != nil {
			return results, fmt.Errorf("%s: written, but not indexed: %w", op, err)
		}
	}
	return results, nil
}

// applyContext is the context ApplyOrders' transaction runs under. On
// SQLite it has no Done: go-sqlite3 starts a goroutine per statement to
// watch a context that can end (34 of the 441 allocations of a one-order
// apply), and a transaction on the one write connection is bounded
// anyway, each statement by the busy timeout. So once begun, an
// apply commits even when ctx ends meanwhile: the drain finishes
// in-flight work rather than throwing it away, and the events it
// answers are acknowledged, not redelivered. A ctx already ended stops
// the apply before it begins. PostgreSQL keeps ctx: its driver watches
// it without a goroutine per statement, and a server-side lock wait has
// no busy timeout to bound it.
func (db *DB) applyContext(ctx context.Context) (context.Context, error) {
	if db.dialect != DialectSQLite {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// apply works out what one params does, against the batch so far: the
// sequence guard and the bookkeeping here, what a newer fetch records by
// ordersync.ChangeOf.
func (b *batch) apply(p *ordersync.ApplyParams, states map[orderKey]*orderState) (ordersync.ApplyResult, error) {
	o := p.Order
	key := orderKey{p.Account, o.OrderCode}
	bo := b.orders[key]
	if bo == nil {
		st := states[key]
		if st == nil {
			st = &orderState{Account: p.Account, Code: o.OrderCode, FirstSeenAt: dbTime(b.now)}
		}
		bo = &batchOrder{st: st, hadDetails: st.Fetched}
		if st.Fetched {
			bo.stored = *st
		}
		if at, ok := b.announced[key]; ok {
			bo.announced = &at
		}
		b.orders[key] = bo
		b.keys = append(b.keys, key)
	}
	st := bo.st

	for _, ev := range p.Events {
		if ev.Account == "" {
			ev.Account = p.Account
		}
		if ev.ReceivedAt.IsZero() {
			ev.ReceivedAt = b.now
		}
		ev.ReceivedAt = dbTime(ev.ReceivedAt)
		ev.OrderCode = o.OrderCode
		if ev.OrderID == "" {
			ev.OrderID = o.OrderID
		}
		if ev.OrderReference == "" {
			ev.OrderReference = o.OrderReference
		}
		ev.Outcome = ordersync.OutcomeSynced
		b.addEvent(ev, key)
		if ev.Type.AnnouncesPayment() && (bo.announced == nil || ev.ReceivedAt.Before(*bo.announced)) {
			at := ev.ReceivedAt
			bo.announced = &at
		}
	}

	if st.FetchSeq >= p.Seq {
		prev := ordersync.Status(st.Status)
		return ordersync.ApplyResult{From: prev, Status: prev}, nil
	}
	c, err := ordersync.ChangeOf(p.Account, st.mirrorState(), o)
	if err != nil {
		return ordersync.ApplyResult{}, err
	}
	res := ordersync.ApplyResult{Applied: true, Created: c.Created, Changed: c.Changed, From: c.From, Status: c.State.Status, Paid: c.Paid}

	fetchedAt := p.FetchedAt
	if fetchedAt.IsZero() {
		fetchedAt = b.now
	}
	fetchedAt = dbTime(fetchedAt)
	bo.synced = true
	st.FetchSeq = p.Seq
	st.FetchCount++
	st.LastSyncedAt = &fetchedAt
	for _, ev := range p.Events {
		if at := dbTime(ev.ReceivedAt); !at.IsZero() && (st.LastEventAt == nil || at.After(*st.LastEventAt)) {
			st.LastEventAt, st.LastEventType = &at, string(ev.Type)
		}
	}
	if c.Changed {
		st.ChangedAt = &fetchedAt
	}
	if len(c.History) > 0 {
		st.StatusChangedAt = &fetchedAt
	}
	if c.Paid && st.PaidAt == nil {
		paidAt := dbTime(ordersync.PaidAt(bo.announced, fetchedAt))
		st.PaidAt = &paidAt
	}
	if st.PaidAt == nil && c.State.Status == ordersync.StatusCancelled && len(c.History) > 0 &&
		ordersync.ReversesPayment(o, st.PaymentSeen, bo.announced != nil) {
		// A payment taken and reversed before any fetch saw it PAID.
		paidAt := dbTime(ordersync.PaidAt(bo.announced, fetchedAt))
		st.PaidAt = &paidAt
	}
	st.PaymentSeen = st.PaymentSeen || o.HasPaymentEvidence()
	st.scheduleNextCheck(c.State.Status, fetchedAt, b.dense[p.Account])
	if st.NextCheckAt != nil {
		res.NextCheck = *st.NextCheckAt
	}
	if !c.Changed {
		return res, nil
	}

	if !c.Created {
		b.changes = append(b.changes, changeEntry{key: key, at: fetchedAt, cause: p.Cause, prev: bo.order, next: o})
	}
	st.Status, st.Hash, st.PaidFired, st.Transitions, st.Fetched = string(c.State.Status), c.State.DocumentHash, c.State.PaidFired, c.State.Transitions, true
	bo.changed, bo.order, bo.doc, bo.hash = true, o, c.Document, c.State.DocumentHash
	for _, h := range c.History {
		b.history = append(b.history, historyEntry{key, h, p.Seq, fetchedAt, p.Cause})
	}
	if len(c.Messages) == 0 {
		return res, nil
	}
	payload := len(b.payloads)
	withDoc := *o
	withDoc.Raw = c.Document
	b.payloads = append(b.payloads, ordersync.MirroredOrder{Account: p.Account, Order: withDoc, Sync: st.syncInfo()})
	for _, m := range c.Messages {
		m.TraceParent = p.TraceParent
		b.outbox = append(b.outbox, outboxEntry{key, m, payload, b.applying})
	}
	return res, nil
}

// addEvent logs an event that came with the batch's order key (the zero
// key: none); a MsgID logged earlier in the batch is replaced, as one
// statement must not upsert the same row twice.
func (b *batch) addEvent(ev ordersync.EventRecord, key orderKey) {
	if i, ok := b.eventAt[ev.MsgID]; ok {
		b.events[i], b.eventOrders[i] = ev, key
		return
	}
	b.eventAt[ev.MsgID] = len(b.events)
	b.events = append(b.events, ev)
	b.eventOrders = append(b.eventOrders, key)
}

// eventOrderRow is the row id event i is logged under: its order's, when
// the order has a row and the event is of the order's account; else nil,
// and the event is found by its code.
func (b *batch) eventOrderRow(i int) any {
	k := b.eventOrders[i]
	if bo := b.orders[k]; bo != nil && bo.st.ID != 0 && b.events[i].Account == k.account {
		return bo.st.ID
	}
	return nil
}
