package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// PruneSentOutbox deletes up to limit outbox messages published before
// sentBefore, oldest first, and returns how many it deleted. A message not
// yet published is never deleted, however old. Messages marked each by its
// sent_at go first, then those marked by position (outbox_marks), with
// the positions no message is left under but the last, which says how
// far the outbox was sent.
func (db *DB) PruneSentOutbox(ctx context.Context, sentBefore time.Time, limit int) (int, error) {
	n, err := db.pruneBefore(ctx, "prune sent outbox", "outbox", "id", "sent_at", sentBefore, limit)
	if err != nil || n >= limit {
		return n, err
	}
	err = db.inTx(ctx, "prune sent outbox", func(tx *sqlx.Tx) error {
		var upTo int64
		if err := tx.GetContext(ctx, &upTo, db.rebind(`SELECT COALESCE(MAX(upto), 0) FROM outbox_marks WHERE sent_at < ?`), dbTime(sentBefore)); err != nil {
			return fmt.Errorf("read the sent positions: %w", err)
		}
		if upTo == 0 {
			return nil
		}
		res, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox WHERE id <= ? AND sent_at IS NULL ORDER BY id LIMIT ?)`), upTo, limit-n)
		if err != nil {
			return err
		}
		deleted, err := rowsAffected(res)
		if err != nil {
			return err
		}
		n += deleted
		if _, err := tx.ExecContext(ctx, `DELETE FROM outbox_marks WHERE upto < COALESCE((SELECT MIN(id) FROM outbox), upto + 1)
    AND upto < (SELECT MAX(upto) FROM outbox_marks)`); err != nil {
			return fmt.Errorf("delete the positions passed: %w", err)
		}
		return nil
	})
	return n, err
}

// pruneBefore deletes up to limit rows of table whose column is before t,
// oldest first, one statement through the column's index, and returns how
// many it deleted. Rows whose column is NULL are never deleted.
func (db *DB) pruneBefore(ctx context.Context, op, table, key, column string, t time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("%s: limit must be positive, got %d", op, limit)
	}
	var n int
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM `+table+` WHERE `+key+` IN (
    SELECT `+key+` FROM `+table+` WHERE `+column+` < ? ORDER BY `+column+` LIMIT ?)`), dbTime(t), limit)
		if err != nil {
			return err
		}
		n, err = rowsAffected(res)
		return err
	})
	return n, err
}

// PruneEventLog deletes up to limit event log rows received before
// receivedBefore, oldest first within each account, and returns how many
// it deleted. It reaches each account's old rows through the index the
// event log is listed by, so it reads little beyond what it deletes.
func (db *DB) PruneEventLog(ctx context.Context, receivedBefore time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("prune event log: limit must be positive, got %d", limit)
	}
	var n int
	err := db.inTx(ctx, "prune event log", func(tx *sqlx.Tx) error {
		// The accounts, one index seek each rather than a scan of the log.
		var accounts []string
		if err := tx.SelectContext(ctx, &accounts, `WITH RECURSIVE accounts(account) AS (
    SELECT MIN(account) FROM event_log
    UNION ALL
    SELECT (SELECT MIN(e.account) FROM event_log e WHERE e.account > accounts.account) FROM accounts WHERE accounts.account IS NOT NULL
)
SELECT account FROM accounts WHERE account IS NOT NULL`); err != nil {
			return fmt.Errorf("list accounts: %w", err)
		}
		query := db.rebind(`DELETE FROM event_log WHERE id IN (
    SELECT id FROM event_log WHERE account = ? AND received_at < ? ORDER BY received_at LIMIT ?)`)
		for _, a := range accounts {
			if n >= limit {
				break
			}
			res, err := tx.ExecContext(ctx, query, a, dbTime(receivedBefore), limit-n)
			if err != nil {
				return fmt.Errorf("account %s: %w", a, err)
			}
			deleted, err := rowsAffected(res)
			if err != nil {
				return err
			}
			n += deleted
		}
		return nil
	})
	return n, err
}

// PruneDeliveryLog deletes up to limit delivery log rows that ended before
// endedBefore, oldest first, and as many kept failures, and returns how
// many rows it deleted.
func (db *DB) PruneDeliveryLog(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	n, err := db.pruneBefore(ctx, "prune delivery log", "delivery_log", "webhook_id", "ended_at", endedBefore, limit)
	if err != nil {
		return n, err
	}
	m, err := db.pruneBefore(ctx, "prune delivery failures", "delivery_failures", "id", "ended_at", endedBefore, limit)
	return n + m, err
}

// PruneDocumentChanges deletes up to limit document change rows recorded
// before before, oldest first, and returns how many it deleted.
func (db *DB) PruneDocumentChanges(ctx context.Context, before time.Time, limit int) (int, error) {
	return db.pruneBefore(ctx, "prune document changes", "document_changes", "id", "at", before, limit)
}

func rowsAffected(res sql.Result) (int, error) {
	n, err := res.RowsAffected()
	return int(n), err
}
