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

// denseChecks reads account's evidence of lost webhooks (table
// dense_checks, migration 12): the zero value when there is none.
func (db *DB) denseChecks(ctx context.Context, q sqlx.QueryerContext, account string) (ordersync.DenseChecks, error) {
	var row struct {
		Since time.Time `db:"active_since"`
		Until time.Time `db:"dense_until"`
	}
	var s *sqlx.Stmt
	if tx, ok := q.(*sqlx.Tx); ok {
		s = db.txPrepared(ctx, tx, denseChecksQuery)
	}
	var err error
	if s != nil {
		err = s.GetContext(ctx, &row, account)
	} else {
		err = sqlx.GetContext(ctx, q, &row, db.rebind(denseChecksQuery), account)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ordersync.DenseChecks{}, nil
	case err != nil:
		return ordersync.DenseChecks{}, fmt.Errorf("read the dense checks of %s: %w", account, err)
	}
	return ordersync.DenseChecks{Since: row.Since.UTC(), Until: row.Until.UTC()}, nil
}

const denseChecksQuery = `SELECT active_since, dense_until FROM dense_checks WHERE account = ?`

// batchDenseChecks reads the evidence of every account of a batch, so
// that each order's next check is set by what its account's record says.
func (db *DB) batchDenseChecks(ctx context.Context, tx *sqlx.Tx, params []ordersync.ApplyParams) (map[string]ordersync.DenseChecks, error) {
	out := map[string]ordersync.DenseChecks{}
	for _, p := range params {
		if _, ok := out[p.Account]; ok {
			continue
		}
		d, err := db.denseChecks(ctx, tx, p.Account)
		if err != nil {
			return nil, err
		}
		out[p.Account] = d
	}
	return out, nil
}

// DenseChecks returns account's evidence of lost webhooks.
func (db *DB) DenseChecks(ctx context.Context, account string) (ordersync.DenseChecks, error) {
	return db.denseChecks(ctx, db.read, account)
}

// TightenChecks records account's evidence of lost webhooks and brings
// the next check of every open order it covers at now to what the dense
// schedule says, unless it is due sooner: from then on every fetch of
// those orders sets their next check densely too, until dense.Until. It
// returns how many orders it brought nearer.
func (db *DB) TightenChecks(ctx context.Context, account string, dense ordersync.DenseChecks, now time.Time) (int, error) {
	n := 0
	err := db.inTx(ctx, "tighten the checks of "+account, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO dense_checks (account, active_since, dense_until) VALUES (?, ?, ?)
ON CONFLICT (account) DO UPDATE SET active_since = excluded.active_since, dense_until = excluded.dense_until`),
			account, dbTime(dense.Since), dbTime(dense.Until)); err != nil {
			return err
		}
		since := dbTime(dense.Since)
		var rows []claimRow
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT account, order_code, order_id, order_reference, expires_at, next_check_at,
    status, first_seen_at, last_event_at, changed_at, last_event_type
FROM orders WHERE account = ? AND next_check_at IS NOT NULL
  AND (first_seen_at >= ? OR last_event_at >= ? OR changed_at >= ?)`), account, since, since, since); err != nil {
			return err
		}
		for _, r := range rows {
			c := r.due()
			c.State.Dense = dense
			due, ok := ordersync.NextCheck(c.State, now)
			if !ok || !due.Before(c.Due) {
				continue
			}
			if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE orders SET next_check_at = ? WHERE account = ? AND order_code = ?`),
				dbTime(due), account, r.Code); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
