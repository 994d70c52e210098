package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// PendingOutbox returns up to limit unsent messages, oldest first. Limit
// defaults to 100 and is capped at 1000.
func (db *DB) PendingOutbox(ctx context.Context, limit int) ([]ordersync.OutboxMessage, error) {
	var msgs []ordersync.OutboxMessage
	err := db.inReadTx(ctx, "list pending outbox", func(tx *sqlx.Tx) error {
		var rows []struct {
			ID        int64     `db:"id"`
			Account   string    `db:"account"`
			OrderCode string    `db:"order_code"`
			Subject   string    `db:"subject"`
			MsgID     string    `db:"msg_id"`
			Payload   []byte    `db:"payload"`
			CreatedAt time.Time `db:"created_at"`
			From      string    `db:"from_status"`
		}
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT id, account, order_code, subject, msg_id, payload, created_at, from_status
FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT ?`), clampLimit(limit, defaultListLimit, maxListLimit)); err != nil {
			return err
		}
		msgs = make([]ordersync.OutboxMessage, len(rows))
		for i, r := range rows {
			msgs[i] = ordersync.OutboxMessage{ID: r.ID, Account: r.Account, OrderCode: r.OrderCode, Subject: r.Subject,
				MsgID: r.MsgID, Payload: r.Payload, CreatedAt: r.CreatedAt.UTC(), From: ordersync.Status(r.From)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// MarkOutboxSent records that messages were published. Messages already
// marked keep their first sent_at; unknown ids are ignored, as a relay
// racing another one may mark what the other already did.
func (db *DB) MarkOutboxSent(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return db.inTx(ctx, fmt.Sprintf("mark %d outbox messages sent", len(ids)), func(tx *sqlx.Tx) error {
		for rest := ids; len(rest) > 0; {
			chunk := rest[:min(len(rest), maxInParams)]
			rest = rest[len(chunk):]
			args := make([]any, 0, len(chunk)+1)
			args = append(args, dbTime(at))
			for _, id := range chunk {
				args = append(args, id)
			}
			if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE outbox SET sent_at = ? WHERE sent_at IS NULL AND id IN (`+placeholders(len(chunk))+`)`), args...); err != nil {
				return err
			}
		}
		return nil
	})
}
