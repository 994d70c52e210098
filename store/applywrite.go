package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

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
	insertChanges = rowsSQL{prefix: `INSERT INTO document_changes (order_row, account, order_code, at, cause, fields) VALUES `, cols: 6}
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

// writeBatch writes what the batch worked out: event log, orders (in full
// or only their bookkeeping), line items and metadata, history, document
// changes, outbox.
func (db *DB) writeBatch(ctx context.Context, tx *sqlx.Tx, b *batch) error {
	// The outbox payloads are encoded (and compressed as SQLite stores
	// them), and the document changes' fields worked out, on another core
	// while the statements before theirs run: the transaction holds the
	// database's only writer meanwhile.
	var (
		payloads  = make([][]byte, len(b.payloads))
		stored    = make([][]byte, len(b.payloads))
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
			stored[i] = db.storedPayload(payloads[i])
		}
		for i := range b.changes {
			c := &b.changes[i]
			fields, err := c.fieldsJSON()
			if err != nil {
				encodeErr = fmt.Errorf("encode the changed fields of %s: %w", c.key.code, err)
				return
			}
			changes[i] = []any{nil, c.key.account, c.key.code, c.at, string(c.cause), string(fields)}
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
	// Each change's order row: an order first written in this batch has
	// one only now, after the orders' upsert.
	for i := range b.changes {
		changes[i][0] = b.orders[b.changes[i].key].st.ID
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
		outbox[i] = []any{b.orders[e.key].st.ID, e.key.account, e.key.code, e.msg.Subject, e.msg.MsgID, stored[e.payload], created, string(e.msg.From), nullString(e.msg.TraceParent)}
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
