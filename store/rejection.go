package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// RecordRejections adds the counts of refused requests to the rejection
// record, then deletes the minutes before p.Before and, past p.MaxRows
// rows, the oldest minutes: the record never holds more than MaxRows rows,
// whatever arrives.
func (db *DB) RecordRejections(ctx context.Context, p ordersync.RecordRejectionsParams) error {
	op := fmt.Sprintf("record %d rejection counts", len(p.Counts))
	if p.MaxRows < 1 {
		return fmt.Errorf("%s: MaxRows must be positive, got %d", op, p.MaxRows)
	}
	upsert := db.rebind(`INSERT INTO webhook_rejections (minute, account, source, reason, count, last_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (minute, account, source, reason) DO UPDATE SET
    count = webhook_rejections.count + excluded.count,
    last_at = CASE WHEN excluded.last_at > webhook_rejections.last_at THEN excluded.last_at ELSE webhook_rejections.last_at END`)
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		for _, c := range p.Counts {
			if _, err := tx.ExecContext(ctx, upsert, dbTime(c.Minute), c.Account, c.Source, string(c.Reason), c.Count, dbTime(c.Last)); err != nil {
				return fmt.Errorf("add %s/%s/%s: %w", c.Account, c.Source, c.Reason, err)
			}
		}
		if !p.Before.IsZero() {
			if _, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM webhook_rejections WHERE minute < ?`), dbTime(p.Before)); err != nil {
				return fmt.Errorf("delete expired: %w", err)
			}
		}
		// The minute of the row MaxRows+1 from the newest: it and every
		// earlier minute go.
		var cut time.Time
		err := tx.QueryRowxContext(ctx, db.rebind(`SELECT minute FROM webhook_rejections ORDER BY minute DESC LIMIT 1 OFFSET ?`), p.MaxRows).Scan(&cut)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("find the oldest minute kept: %w", err)
		}
		if _, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM webhook_rejections WHERE minute <= ?`), dbTime(cut)); err != nil {
			return fmt.Errorf("delete past %d rows: %w", p.MaxRows, err)
		}
		return nil
	})
}

// ListRejections returns the rejection record, newest minute first.
func (db *DB) ListRejections(ctx context.Context) ([]ordersync.RejectionCount, error) {
	var rows []struct {
		Minute  time.Time `db:"minute"`
		Account string    `db:"account"`
		Source  string    `db:"source"`
		Reason  string    `db:"reason"`
		Count   int64     `db:"count"`
		LastAt  time.Time `db:"last_at"`
	}
	err := db.read.SelectContext(ctx, &rows, `SELECT minute, account, source, reason, count, last_at FROM webhook_rejections
ORDER BY minute DESC, account, source, reason`)
	if err != nil {
		return nil, translate("list rejections", err)
	}
	out := make([]ordersync.RejectionCount, len(rows))
	for i, r := range rows {
		out[i] = ordersync.RejectionCount{Minute: r.Minute.UTC(), Account: r.Account, Source: r.Source,
			Reason: ordersync.RejectionReason(r.Reason), Count: r.Count, Last: r.LastAt.UTC()}
	}
	return out, nil
}
