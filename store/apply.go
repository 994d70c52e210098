package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// The multi-row statements of ApplyOrders.
var (
	// upsertOrders writes every column of fetched orders and returns their
	// row ids, which their line items, metadata, history and outbox
	// messages are keyed by.
	upsertOrders = upsertOrderFields(orderFields, " RETURNING id, account, order_code")
	// touchOrders updates only the sync bookkeeping of orders whose
	// document did not change (the rows exist: the insert never happens).
	touchOrders    = upsertOrderFields(touchFields, "")
	deleteItems    = rowsSQL{prefix: `DELETE FROM order_line_items WHERE order_row IN (`, cols: 1, suffix: `)`}
	deleteMetadata = rowsSQL{prefix: `DELETE FROM order_metadata WHERE order_row IN (`, cols: 1, suffix: `)`}
	insertItems    = rowsSQL{prefix: `INSERT INTO order_line_items (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total) VALUES `, cols: 10}
	insertMetadata = rowsSQL{prefix: `INSERT INTO order_metadata (order_row, position, name, value) VALUES `, cols: 4}
	insertHistory  = rowsSQL{prefix: `INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause) VALUES `, cols: 6}
	// insertOutbox returns each message's id, which the relay, handed the
	// messages after the commit, publishes them in order by.
	insertOutbox = rowsSQL{prefix: `INSERT INTO outbox (order_row, account, order_code, subject, msg_id, payload, created_at, from_status, trace_parent) VALUES `, cols: 9,
		suffix: ` RETURNING id, msg_id`}
	insertChanges = rowsSQL{prefix: `INSERT INTO document_changes (account, order_code, at, cause, fields) VALUES `, cols: 5}
	upsertEvents  = rowsSQL{
		prefix: `INSERT INTO event_log (msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail, order_row) VALUES `,
		cols:   12,
		// A redelivery keeps its receipt time, so the receipt's unique key
		// finds its row: an index that appends, where the message id's
		// alone would take each event on a random page.
		suffix: ` ON CONFLICT (account, received_at, msg_id) DO UPDATE SET
    outcome = excluded.outcome,
    order_row = COALESCE(excluded.order_row, event_log.order_row),
    detail = excluded.detail,
    type = CASE WHEN excluded.type <> '' THEN excluded.type ELSE event_log.type END,
    order_type = CASE WHEN excluded.order_type <> '' THEN excluded.order_type ELSE event_log.order_type END,
    order_id = CASE WHEN excluded.order_id <> '' THEN excluded.order_id ELSE event_log.order_id END,
    order_reference = CASE WHEN excluded.order_reference <> '' THEN excluded.order_reference ELSE event_log.order_reference END,
    order_code = CASE WHEN excluded.order_code <> '' THEN excluded.order_code ELSE event_log.order_code END,
    signature = CASE WHEN excluded.signature <> '' THEN excluded.signature ELSE event_log.signature END`,
	}
	applyStatements = []rowsSQL{upsertOrders, touchOrders, deleteItems, deleteMetadata, insertItems, insertMetadata, insertHistory, insertOutbox, upsertEvents,
		appendChanges, insertChanges}
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
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
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

// fieldsJSON names, as a JSON array, the fields in which the change's
// document differs from the one the mirror held: the batch's last one,
// else the stored one. A stored document that no longer decodes names none.
func (c *changeEntry) fieldsJSON() ([]byte, error) {
	fields := []string{}
	if c.prev != nil {
		fields = append(fields, ordersync.ChangedFields(c.prev, c.next)...)
	}
	return json.Marshal(fields)
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

// writeBatch writes what the batch worked out: event log, orders (in full
// or only their bookkeeping), line items and metadata, history, document
// changes, outbox.
func (db *DB) writeBatch(ctx context.Context, tx *sqlx.Tx, b *batch) error {
	// The outbox payloads are encoded, and the document changes' fields
	// worked out, on another core while the statements before theirs run:
	// the transaction holds the database's only writer meanwhile.
	var (
		payloads  = make([][]byte, len(b.payloads))
		splits    = make([]int, len(b.payloads))
		changes   = make([][]any, len(b.changes))
		encodeErr error
		encoding  sync.WaitGroup
	)
	encoding.Go(func() {
		for i := range b.payloads {
			var err error
			if payloads[i], splits[i], err = b.payloads[i].EncodeEvent(); err != nil {
				encodeErr = fmt.Errorf("encode outbox payload of %s: %w", b.payloads[i].Order.OrderCode, err)
				return
			}
		}
		for i := range b.changes {
			c := &b.changes[i]
			fields, err := c.fieldsJSON()
			if err != nil {
				encodeErr = fmt.Errorf("encode the changed fields of %s: %w", c.key.code, err)
				return
			}
			changes[i] = []any{c.key.account, c.key.code, c.at, string(c.cause), string(fields)}
		}
	})
	defer encoding.Wait()

	// A changed order fetched before is written where it differs from its
	// stored row: only the columns whose values changed (so SQLite rewrites
	// only their indexes and the update triggers of only those columns
	// run), its line items and metadata only when they changed. Orders
	// that changed the same columns share a statement.
	var full, touched, replacedItems, replacedMetadata [][]any
	var (
		partial = map[uint64][][]any{}
		masks   []uint64 // in first-seen order, for deterministic writes
	)
	for _, k := range b.keys {
		bo := b.orders[k]
		st := bo.st
		if !bo.changed {
			if bo.synced {
				touched = append(touched, (&orderWrite{key: k, st: st}).values(touchFields))
			}
			continue
		}
		w := orderWriteOf(k, st, bo.order, bo.doc, bo.hash)
		if !bo.hadDetails || bo.storedOrder == nil {
			full = append(full, w.values(orderFields))
			bo.writeItems, bo.writeMetadata = true, true
		} else {
			mask := changedOrderFields(storedWrite(k, bo), w)
			if mask == 0 {
				// Cannot happen (its document's hash changed), and an
				// update of nothing is not a statement.
				mask = 1 << slices.IndexFunc(orderFields, func(f orderField) bool { return f.column == "document_hash" })
			}
			if _, ok := partial[mask]; !ok {
				masks = append(masks, mask)
			}
			partial[mask] = append(partial[mask], partialOrderFields(mask).row(w))
			bo.writeItems = !sameLineItems(bo.storedOrder.LineItems, bo.order.LineItems)
			bo.writeMetadata = !slices.Equal(bo.storedOrder.Metadata, bo.order.Metadata)
		}
		if bo.hadDetails {
			if bo.writeItems {
				replacedItems = append(replacedItems, []any{st.ID})
			}
			if bo.writeMetadata {
				replacedMetadata = append(replacedMetadata, []any{st.ID})
			}
		}
	}
	steps := []writeStep{
		{"delete replaced line items", deleteItems, replacedItems},
		{"delete replaced metadata", deleteMetadata, replacedMetadata},
		{"update sync bookkeeping", touchOrders, touched},
	}
	for _, m := range masks {
		r := partialOrderFields(m).sql
		steps = append(steps, writeStep{"update changed orders", r, partial[m]})
		b.unprepared = append(b.unprepared, db.unpreparedRows(r, len(partial[m]))...)
	}
	if err := db.execSteps(ctx, tx, steps); err != nil {
		return err
	}
	err := db.queryRows(ctx, tx, upsertOrders, full, func(rows *sql.Rows) error {
		var (
			id int64
			k  orderKey
		)
		if err := rows.Scan(&id, &k.account, &k.code); err != nil {
			return err
		}
		bo := b.orders[k]
		if bo == nil {
			return fmt.Errorf("returned order %s/%s, which the batch did not write", k.account, k.code)
		}
		bo.st.ID = id
		return nil
	})
	if err != nil {
		return fmt.Errorf("write orders: %w", err)
	}
	// The events after the orders, so that new orders' have their row ids.
	events := make([][]any, len(b.events))
	for i, ev := range b.events {
		events[i] = eventValues(ev, b.eventOrderRow(i))
	}
	if err := db.execRows(ctx, tx, upsertEvents, events); err != nil {
		return fmt.Errorf("log events: %w", err)
	}

	var items, metadata, history [][]any
	var changed []int64
	for _, k := range b.keys {
		bo := b.orders[k]
		if !bo.changed {
			continue
		}
		row := bo.st.ID
		if row == 0 {
			return fmt.Errorf("write orders: no row id returned for %s/%s", k.account, k.code)
		}
		if bo.writeItems {
			for i, li := range bo.order.LineItems {
				items = append(items, lineItemValues(row, i, li))
			}
		}
		if bo.writeMetadata {
			for i, m := range bo.order.Metadata {
				metadata = append(metadata, []any{row, i, m.Name, m.Value})
			}
		}
		changed = append(changed, row)
	}
	for _, h := range b.history {
		history = append(history, []any{b.orders[h.key].st.ID, string(h.From), string(h.To), h.seq, h.at, string(h.cause)})
	}
	if err := db.execSteps(ctx, tx, []writeStep{
		{"insert line items", insertItems, items},
		{"insert metadata", insertMetadata, metadata},
		{"insert status history", insertHistory, history},
	}); err != nil {
		return err
	}
	// The read side (name words, report buckets) follows from the
	// indexer, which takes these rows after the commit.
	if err := db.noteChanges(ctx, tx, changed, dbTime(b.now)); err != nil {
		return err
	}

	if len(b.outbox) == 0 && len(b.changes) == 0 {
		return nil
	}
	encoding.Wait()
	if encodeErr != nil {
		return encodeErr
	}
	if err := db.execRows(ctx, tx, insertChanges, changes); err != nil {
		return fmt.Errorf("insert document changes: %w", err)
	}
	if len(b.outbox) == 0 {
		return nil
	}
	created := dbTime(b.now)
	outbox := make([][]any, len(b.outbox))
	byMsgID := make(map[string]*ordersync.OutboxMessage, len(b.outbox))
	for i := range b.outbox {
		e := &b.outbox[i]
		outbox[i] = []any{b.orders[e.key].st.ID, e.key.account, e.key.code, e.msg.Subject, e.msg.MsgID, payloads[e.payload], created, string(e.msg.From), nullString(e.msg.TraceParent)}
		e.msg.Payload, e.msg.StatusChangeAt, e.msg.CreatedAt = payloads[e.payload], splits[e.payload], created
		byMsgID[e.msg.MsgID] = &e.msg
	}
	if err := db.lockOutbox(ctx, tx); err != nil {
		return err
	}
	// The ids come back in no promised order: each is matched by its
	// message id, unique in the batch.
	err = db.queryRows(ctx, tx, insertOutbox, outbox, func(rows *sql.Rows) error {
		var (
			id    int64
			msgID string
		)
		if err := rows.Scan(&id, &msgID); err != nil {
			return err
		}
		m := byMsgID[msgID]
		if m == nil {
			return fmt.Errorf("returned outbox message %s, which the batch did not write", msgID)
		}
		m.ID = id
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue outbox messages: %w", err)
	}
	return nil
}

// writeStep is one multi-row statement of writeBatch.
type writeStep struct {
	what string
	sql  rowsSQL
	rows [][]any
}

func (db *DB) execSteps(ctx context.Context, tx *sqlx.Tx, steps []writeStep) error {
	for _, s := range steps {
		if err := db.execRows(ctx, tx, s.sql, s.rows); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// eventValues are an event log row's values; orderRow is its order's row
// id, or nil.
func eventValues(ev ordersync.EventRecord, orderRow any) []any {
	return []any{ev.MsgID, ev.Account, dbTime(ev.ReceivedAt), string(ev.Type), ev.OrderType, string(ev.OrderID),
		ev.OrderReference, ev.OrderCode, string(ev.Signature), string(ev.Outcome), ev.Detail, orderRow}
}

// lineItemValues are the values of a line item's row.
func lineItemValues(row int64, i int, li ordersync.LineItem) []any {
	var promo any
	if li.PromoPrice != nil {
		promo = *li.PromoPrice
	}
	return []any{row, i, string(li.ProductID), li.SKU, li.Name, li.Price, promo, li.Quantity, li.ImageURL, li.SubTotal}
}

// sameLineItems: rows written from a and from b would hold the same values.
func sameLineItems(a, b []ordersync.LineItem) bool {
	if len(a) != len(b) {
		return false
	}
	// Field by field, as lineItemValues writes them (amounts as their text),
	// without boxing each value.
	for i := range a {
		x, y := &a[i], &b[i]
		if x.ProductID != y.ProductID || x.SKU != y.SKU || x.Name != y.Name || !x.Price.Identical(y.Price) ||
			(x.PromoPrice == nil) != (y.PromoPrice == nil) || (x.PromoPrice != nil && !x.PromoPrice.Identical(*y.PromoPrice)) ||
			x.Quantity != y.Quantity || x.ImageURL != y.ImageURL || !x.SubTotal.Identical(y.SubTotal) {
			return false
		}
	}
	return true
}
