package store

import (
	"context"
	"fmt"
	"slices"
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
			Trace     string    `db:"trace_parent"`
		}
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT id, account, order_code, subject, msg_id, payload, created_at, from_status, COALESCE(trace_parent, '') AS trace_parent
FROM outbox WHERE sent_at IS NULL AND id > `+sentUpTo+` ORDER BY id LIMIT ?`), clampLimit(limit, defaultListLimit, maxListLimit)); err != nil {
			return err
		}
		msgs = make([]ordersync.OutboxMessage, len(rows))
		for i, r := range rows {
			payload, err := outboxPayload(r.Payload)
			if err != nil {
				return fmt.Errorf("outbox message %d: %w", r.ID, err)
			}
			msgs[i] = ordersync.OutboxMessage{ID: r.ID, Account: r.Account, OrderCode: r.OrderCode, Subject: r.Subject,
				MsgID: r.MsgID, Payload: payload, CreatedAt: r.CreatedAt.UTC(), From: ordersync.Status(r.From), TraceParent: r.Trace}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// sentUpTo is the position up to which every outbox message is sent
// (outbox_marks, migration 27): above it, a message is sent when its
// sent_at is set.
const (
	sentUpToQuery = `SELECT COALESCE(MAX(upto), 0) FROM outbox_marks`
	sentUpTo      = `(` + sentUpToQuery + `)`
)

// MarkOutboxSent records that messages were published. Messages already
// marked keep their first sent_at; unknown ids are ignored, as a relay
// racing another one may mark what the other already did. When the
// messages are every unsent one above the last position, one position
// marks them all; otherwise each row's sent_at is set.
func (db *DB) MarkOutboxSent(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return db.inTx(ctx, fmt.Sprintf("mark %d outbox messages sent", len(ids)), func(tx *sqlx.Tx) error {
		if marked, err := db.markUpTo(ctx, tx, ids, at); err != nil || marked {
			return err
		}
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

// markUpTo marks ids sent with one position when they are every unsent
// message above the last position up to the greatest of them, and reports
// whether it did. Every message with an id up to the greatest is committed
// and seen here: SQLite's one writer holds the database, and on PostgreSQL
// the writers of outbox messages take their ids in commit order
// (lockOutbox). Two relays that mark the same messages at once record one
// position.
func (db *DB) markUpTo(ctx context.Context, tx *sqlx.Tx, ids []int64, at time.Time) (bool, error) {
	if unlocked, err := db.outboxWriterUnlocked(ctx, tx); err != nil || unlocked {
		return false, err
	}
	var upTo int64
	if err := tx.GetContext(ctx, &upTo, sentUpToQuery); err != nil {
		return false, fmt.Errorf("read the sent position: %w", err)
	}
	marking := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if id > upTo {
			marking[id] = true
		}
	}
	if len(marking) == 0 {
		return true, nil
	}
	top := slices.Max(ids)
	var unsent []int64
	if err := tx.SelectContext(ctx, &unsent, db.rebind(`SELECT id FROM outbox WHERE sent_at IS NULL AND id > ? AND id <= ? ORDER BY id`), upTo, top); err != nil {
		return false, fmt.Errorf("read the unsent messages: %w", err)
	}
	if len(unsent) != len(marking) {
		return false, nil
	}
	for _, id := range unsent {
		if !marking[id] {
			return false, nil
		}
	}
	if _, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO outbox_marks (upto, sent_at) VALUES (?, ?) ON CONFLICT (upto) DO NOTHING`), top, dbTime(at)); err != nil {
		return false, fmt.Errorf("record the sent position: %w", err)
	}
	return true, nil
}

// outboxWriterUnlocked reports whether, on PostgreSQL, another transaction
// holds outbox rows it wrote without lockOutbox: a release from before the
// lock, running beside this one in a rolling upgrade (or a relay or pruner
// of any release changing rows, which costs only a mark by rows). Such a
// writer's message may commit below a greater id already committed, so
// positions wait until none is left. It is asked before the unsent
// messages are read: a writer that took its id below the greatest being
// marked wrote its row before that one committed, so it is either seen
// here or committed and read below.
func (db *DB) outboxWriterUnlocked(ctx context.Context, tx *sqlx.Tx) (bool, error) {
	if db.dialect != DialectPostgres {
		return false, nil
	}
	var unlocked bool
	err := tx.GetContext(ctx, &unlocked, `SELECT EXISTS (
  SELECT 1 FROM pg_locks w
  WHERE w.locktype = 'relation' AND w.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND w.relation = 'outbox'::regclass AND w.mode = 'RowExclusiveLock' AND w.granted AND w.pid <> pg_backend_pid()
    AND NOT EXISTS (SELECT 1 FROM pg_locks s WHERE s.pid = w.pid AND s.locktype = 'relation' AND s.database = w.database
      AND s.relation = w.relation AND s.mode = 'ShareRowExclusiveLock' AND s.granted))`)
	if err != nil {
		return false, fmt.Errorf("look for unlocked outbox writers: %w", err)
	}
	return unlocked, nil
}

// lockOutbox makes the transaction the only writer of outbox messages
// until it ends, on PostgreSQL: its sequence hands out ids as statements
// ask, so without it a message could commit after one with a greater id
// was published and marked by position, and be taken as sent. The lock
// conflicts with itself and with row writes, not with reads; it is taken
// just before the transaction's last statement, so it is held for little
// more than the commit. SQLite's one writer needs none.
func (db *DB) lockOutbox(ctx context.Context, tx *sqlx.Tx) error {
	if db.dialect != DialectPostgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE outbox IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("lock the outbox: %w", err)
	}
	return nil
}
