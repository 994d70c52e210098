package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// Reconcile limits.
const (
	defaultReconcileLimit = 100
	maxReconcileLimit     = 10000
)

// dueRow is one order of the schedule as the queries read it.
type dueRow struct {
	Account   string     `db:"account"`
	Code      string     `db:"order_code"`
	ID        string     `db:"order_id"`
	Reference string     `db:"order_reference"`
	ExpiresAt *time.Time `db:"expires_at"`
	Due       *time.Time `db:"next_check_at"`
}

func (r dueRow) ref() ordersync.OrderRef {
	ref := ordersync.OrderRef{Account: r.Account, Code: r.Code, ID: ordersync.ID(r.ID), Reference: r.Reference}
	if r.ExpiresAt != nil {
		ref.ExpiresAt = r.ExpiresAt.UTC()
	}
	return ref
}

// ListReconcileCandidates lists orders to re-fetch now, for an on-demand
// reconcile: unless All, those whose status can still change (PENDING,
// PAID, unknown ones, and placeholders never fetched), most overdue first.
// Since applies to the upstream creation time, or to when ordersync first
// saw a placeholder. Limit defaults to 100 and is capped at 10000.
func (db *DB) ListReconcileCandidates(ctx context.Context, filter ordersync.ReconcileFilter) ([]ordersync.OrderRef, error) {
	where := []string{"1 = 1"}
	var args []any
	if filter.Account != "" {
		where, args = append(where, "account = ?"), append(args, filter.Account)
	}
	if !filter.All {
		var final []string
		for _, s := range ordersync.Statuses {
			if !s.CanChange() {
				final = append(final, string(s))
			}
		}
		clause, clauseArgs := statusOutside(final)
		where, args = append(where, clause), append(args, clauseArgs...)
	}
	if !filter.Since.IsZero() {
		where, args = append(where, "COALESCE(created_at, first_seen_at) >= ?"), append(args, dbTime(filter.Since))
	}
	args = append(args, clampLimit(filter.Limit, defaultReconcileLimit, maxReconcileLimit))
	query := `SELECT account, order_code, order_id, order_reference, expires_at, next_check_at FROM orders
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY next_check_at ASC NULLS LAST, account, order_code
LIMIT ?`

	var refs []ordersync.OrderRef
	err := db.inReadTx(ctx, "list reconcile candidates", func(tx *sqlx.Tx) error {
		var rows []dueRow
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), args...); err != nil {
			return err
		}
		refs = make([]ordersync.OrderRef, len(rows))
		for i, r := range rows {
			refs[i] = r.ref()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// ClaimDueChecks returns up to limit orders of account due at now, most
// overdue first, and moves their due time to retryAt, in one transaction.
// The read and the update both follow the schedule's index.
func (db *DB) ClaimDueChecks(ctx context.Context, account string, now time.Time, limit int, retryAt time.Time) ([]ordersync.DueCheck, error) {
	op := fmt.Sprintf("claim due checks of %s", account)
	if limit < 1 {
		return nil, fmt.Errorf("%s: limit must be ≥ 1, got %d", op, limit)
	}
	lock := ""
	if db.dialect == DialectPostgres {
		// Two claims at once (a leader hand-over) take different orders.
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var due []ordersync.DueCheck
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		var rows []dueRow
		err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT account, order_code, order_id, order_reference, expires_at, next_check_at
FROM orders WHERE account = ? AND next_check_at IS NOT NULL AND next_check_at <= ?
ORDER BY next_check_at, order_code LIMIT ?`+lock), account, dbTime(now), min(limit, maxInParams))
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		codes := make([]any, 0, len(rows)+2)
		codes = append(codes, dbTime(retryAt), account)
		due = make([]ordersync.DueCheck, len(rows))
		for i, r := range rows {
			due[i] = ordersync.DueCheck{OrderRef: r.ref(), Due: r.Due.UTC()}
			codes = append(codes, r.Code)
		}
		_, err = tx.ExecContext(ctx, db.rebind(`UPDATE orders SET next_check_at = ?
WHERE account = ? AND order_code IN (`+placeholders(len(rows))+`) AND next_check_at IS NOT NULL`), codes...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return due, nil
}

// DeferCheck moves an order's next check to at, unless its status is final.
func (db *DB) DeferCheck(ctx context.Context, account, code string, at time.Time) error {
	return db.inTx(ctx, fmt.Sprintf("defer the check of %s/%s", account, code), func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE orders SET next_check_at = ?
WHERE account = ? AND order_code = ? AND next_check_at IS NOT NULL`), dbTime(at), account, code)
		return err
	})
}

// CheckBacklog counts account's orders due at now and finds the most
// overdue, from the schedule's index.
func (db *DB) CheckBacklog(ctx context.Context, account string, now time.Time) (ordersync.CheckBacklog, error) {
	var backlog ordersync.CheckBacklog
	err := db.inReadTx(ctx, "read the check backlog of "+account, func(tx *sqlx.Tx) error {
		var err error
		backlog, err = db.checkBacklog(ctx, tx, account, now)
		return err
	})
	return backlog, err
}

// checkBacklog is CheckBacklog in tx, which the overview shares.
func (db *DB) checkBacklog(ctx context.Context, tx *sqlx.Tx, account string, now time.Time) (ordersync.CheckBacklog, error) {
	var backlog ordersync.CheckBacklog
	if err := tx.GetContext(ctx, &backlog.Due, db.rebind(`SELECT COUNT(*) FROM orders
WHERE account = ? AND next_check_at IS NOT NULL AND next_check_at <= ?`), account, dbTime(now)); err != nil {
		return backlog, err
	}
	if backlog.Due == 0 {
		return backlog, nil
	}
	// MIN over a TIMESTAMP column comes back from SQLite as text, so
	// the oldest is read by an ordered LIMIT 1 instead.
	var oldest time.Time
	if err := tx.GetContext(ctx, &oldest, db.rebind(`SELECT next_check_at FROM orders
WHERE account = ? AND next_check_at IS NOT NULL ORDER BY next_check_at LIMIT 1`), account); err != nil {
		return backlog, err
	}
	backlog.Oldest = oldest.UTC()
	return backlog, nil
}

// statusOutside selects the orders whose status is none of final, as ranges
// of the status index: between the final statuses, below the first and
// above the last. "status NOT IN (...)" says the same, but both databases
// answer it by reading every order, mostly final ones in a mirror that has
// run for a while.
// The ranges follow Go's byte order of final, which every collation shares
// for the upper-case ASCII words statuses are.
func statusOutside(final []string) (string, []any) {
	if len(final) == 0 {
		return "1 = 1", nil
	}
	final = slices.Clone(final)
	slices.Sort(final)
	ranges := []string{"status < ?"}
	args := []any{final[0]}
	for i := 1; i < len(final); i++ {
		ranges, args = append(ranges, "(status > ? AND status < ?)"), append(args, final[i-1], final[i])
	}
	ranges, args = append(ranges, "status > ?"), append(args, final[len(final)-1])
	return "(" + strings.Join(ranges, " OR ") + ")", args
}
