package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// orderChangesQuery reads an order's document changes by its row, the
// ones written before migration 37 (which have none) by its code.
const orderChangesQuery = `SELECT at, cause, fields FROM document_changes
WHERE order_row = ? OR (order_row IS NULL AND account = ? AND order_code = ?) ORDER BY at DESC, id DESC LIMIT ?`

// FindOrderHistory returns what the mirror keeps of how a fetched order
// changed, at most limit entries of each kind (default 100, at most 1000),
// newest first, read in one transaction: its document changes, its status
// history and its outbox messages without their payloads. An order never
// fetched is ErrNotFound, as FindOrderByCode has it.
func (db *DB) FindOrderHistory(ctx context.Context, account, orderCode string, limit int) (ordersync.OrderHistory, error) {
	limit = clampLimit(limit, defaultListLimit, maxListLimit)
	var h ordersync.OrderHistory
	err := db.inReadTx(ctx, fmt.Sprintf("find the history of order %s/%s", account, orderCode), func(tx *sqlx.Tx) error {
		var row int64
		if err := tx.GetContext(ctx, &row, db.rebind(`SELECT id FROM orders WHERE account = ? AND order_code = ? AND raw_document IS NOT NULL`),
			account, orderCode); err != nil {
			return err
		}
		var changes []struct {
			At     time.Time `db:"at"`
			Cause  string    `db:"cause"`
			Fields string    `db:"fields"`
		}
		if err := tx.SelectContext(ctx, &changes, db.rebind(orderChangesQuery), row, account, orderCode, limit); err != nil {
			return fmt.Errorf("read document changes: %w", err)
		}
		for _, c := range changes {
			dc := ordersync.DocumentChange{Account: account, OrderCode: orderCode, At: c.At.UTC(), Cause: ordersync.Cause(c.Cause)}
			if err := json.Unmarshal([]byte(c.Fields), &dc.Fields); err != nil {
				return fmt.Errorf("read document changes: fields %q: %w", c.Fields, err)
			}
			h.DocumentChanges = append(h.DocumentChanges, dc)
		}
		var statuses []statusChangeRow
		if err := tx.SelectContext(ctx, &statuses, db.rebind(`SELECT order_row, from_status, to_status, at, cause FROM status_history
WHERE order_row = ? ORDER BY id DESC LIMIT ?`), row, limit); err != nil {
			return fmt.Errorf("read status history: %w", err)
		}
		for _, c := range statuses {
			h.StatusChanges = append(h.StatusChanges, ordersync.StatusChange{
				StatusTransition: ordersync.StatusTransition{From: ordersync.Status(c.From), To: ordersync.Status(c.To)},
				At:               c.At.UTC(), Cause: ordersync.Cause(c.Cause),
			})
		}
		var msgs []struct {
			ID        int64      `db:"id"`
			Subject   string     `db:"subject"`
			MsgID     string     `db:"msg_id"`
			CreatedAt time.Time  `db:"created_at"`
			SentAt    *time.Time `db:"sent_at"`
			MarkedAt  *time.Time `db:"marked_at"`
			From      string     `db:"from_status"`
		}
		// A message sent by position takes its mark's time: the first
		// position at or above its id. A join, not a scalar subquery, so
		// that SQLite's driver reads the column as the time it is.
		if err := tx.SelectContext(ctx, &msgs, db.rebind(`SELECT x.id, x.subject, x.msg_id, x.created_at, x.sent_at, m.sent_at AS marked_at, x.from_status
FROM outbox x LEFT JOIN outbox_marks m ON m.upto = (SELECT MIN(upto) FROM outbox_marks WHERE upto >= x.id)
WHERE x.order_row = ? ORDER BY x.id DESC LIMIT ?`), row, limit); err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		for _, m := range msgs {
			h.Messages = append(h.Messages, ordersync.OutboxMessage{ID: m.ID, Account: account, OrderCode: orderCode, Subject: m.Subject,
				MsgID: m.MsgID, CreatedAt: m.CreatedAt.UTC(), SentAt: utcPtr(cmp.Or(m.SentAt, m.MarkedAt)), From: ordersync.Status(m.From)})
		}
		return nil
	})
	if err != nil {
		return ordersync.OrderHistory{}, err
	}
	return h, nil
}
