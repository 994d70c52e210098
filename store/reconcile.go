package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
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

// claimRow is one due order as a claim reads it: with what the schedule
// knows of it, so the check can say why it is made.
type claimRow struct {
	dueRow
	Status        string     `db:"status"`
	FirstSeenAt   time.Time  `db:"first_seen_at"`
	LastEventAt   *time.Time `db:"last_event_at"`
	ChangedAt     *time.Time `db:"changed_at"`
	LastEventType string     `db:"last_event_type"`
}

func (r claimRow) due() ordersync.DueCheck {
	active := r.FirstSeenAt
	for _, t := range []*time.Time{r.LastEventAt, r.ChangedAt} {
		if t != nil && t.After(active) {
			active = *t
		}
	}
	ref := r.ref()
	return ordersync.DueCheck{OrderRef: ref, Due: r.Due.UTC(), State: ordersync.CheckState{
		Code: r.Code, Status: ordersync.Status(r.Status), ActiveAt: active.UTC(), LastEventType: ordersync.EventType(r.LastEventType), ExpiresAt: ref.ExpiresAt,
	}}
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
	var c conditions
	c.equal("account", filter.Account)
	if !filter.All {
		var final []string
		for _, s := range ordersync.Statuses {
			if !s.CanChange() {
				final = append(final, string(s))
			}
		}
		clause, clauseArgs := statusOutside(final)
		c.add(clause, clauseArgs...)
	}
	if !filter.Since.IsZero() {
		c.add("COALESCE(created_at, first_seen_at) >= ?", dbTime(filter.Since))
	}
	args := append(c.args, clampLimit(filter.Limit, defaultReconcileLimit, maxReconcileLimit))
	query := `SELECT account, order_code, order_id, order_reference, expires_at, next_check_at FROM orders
WHERE ` + c.sql() + `
ORDER BY next_check_at ASC NULLS LAST, account, order_code
LIMIT ?`
	return selectList(ctx, db, "list reconcile candidates", query, args, (*dueRow).ref)
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
		var rows []claimRow
		err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT account, order_code, order_id, order_reference, expires_at, next_check_at,
    status, first_seen_at, last_event_at, changed_at, last_event_type
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
		dense, err := db.denseChecks(ctx, tx, account)
		if err != nil {
			return err
		}
		due = make([]ordersync.DueCheck, len(rows))
		for i, r := range rows {
			due[i] = r.due()
			due[i].State.Dense = dense
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

// PullCheck brings the check of an order still on the schedule to at,
// unless it is due sooner.
func (db *DB) PullCheck(ctx context.Context, account, code string, at time.Time) error {
	return db.inTx(ctx, fmt.Sprintf("pull the check of %s/%s", account, code), func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE orders SET next_check_at = ?
WHERE account = ? AND order_code = ? AND next_check_at > ?`), dbTime(at), account, code, dbTime(at))
		return err
	})
}

// PullChecks makes the checks of account's open orders last active at or
// after activeSince due at at, most recently active first: each is due a
// microsecond before the one active just before it (those already overdue
// too, so the order holds among them). An order fetched less than minGap
// before at is due minGap after that fetch instead: it was just seen. Activity is
// when the order was first seen, its last webhook or its last fetched
// change, as the schedule reads it. A limit above 0 pulls only that many,
// the most recently active; the others keep their checks.
func (db *DB) PullChecks(ctx context.Context, account string, activeSince, at time.Time, minGap time.Duration, limit int) ([]string, error) {
	type row struct {
		Code        string     `db:"order_code"`
		SyncedAt    *time.Time `db:"last_synced_at"`
		FirstSeenAt time.Time  `db:"first_seen_at"`
		LastEventAt *time.Time `db:"last_event_at"`
		ChangedAt   *time.Time `db:"changed_at"`
	}
	var codes []string
	err := db.inTx(ctx, "pull the checks of "+account, func(tx *sqlx.Tx) error {
		var rows []row
		since := dbTime(activeSince)
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT order_code, last_synced_at, first_seen_at, last_event_at, changed_at FROM orders
WHERE account = ? AND next_check_at IS NOT NULL
  AND (first_seen_at >= ? OR last_event_at >= ? OR changed_at >= ?)`), account, since, since, since); err != nil {
			return err
		}
		active := func(r row) time.Time {
			t := r.FirstSeenAt
			for _, u := range []*time.Time{r.LastEventAt, r.ChangedAt} {
				if u != nil && u.After(t) {
					t = *u
				}
			}
			return t
		}
		slices.SortFunc(rows, func(a, b row) int { return cmp.Or(active(b).Compare(active(a)), cmp.Compare(a.Code, b.Code)) })
		if limit > 0 && len(rows) > limit {
			rows = rows[:limit]
		}
		for i, r := range rows {
			due := dbTime(at).Add(time.Duration(i-len(rows)) * time.Microsecond)
			if r.SyncedAt != nil && r.SyncedAt.Add(minGap).After(due) {
				due = dbTime(r.SyncedAt.Add(minGap))
			}
			if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE orders SET next_check_at = ? WHERE account = ? AND order_code = ?`),
				due, account, r.Code); err != nil {
				return err
			}
			codes = append(codes, r.Code)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
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
	// MIN over a TIMESTAMP column comes back from SQLite as text, so
	// the earliest is read by an ordered LIMIT 1 instead.
	var next time.Time
	if err := tx.GetContext(ctx, &next, db.rebind(`SELECT next_check_at FROM orders
WHERE account = ? AND next_check_at IS NOT NULL ORDER BY next_check_at LIMIT 1`), account); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return backlog, nil
		}
		return backlog, err
	}
	backlog.Next = next.UTC()
	if backlog.Due > 0 {
		backlog.Oldest = backlog.Next
	}
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

// BackdateOrders moves back by d the times the schedule reads as account's
// orders' activity and last fetch (first seen, last webhook, last fetched
// change, last fetch), and returns how many orders it moved. ordersync
// never calls it: it is for tools that prepare a mirror as if it had been
// written d earlier (ordersync-lab idle measures serve on orders quiet for
// hours without waiting hours).
func (db *DB) BackdateOrders(ctx context.Context, account string, d time.Duration) (int, error) {
	type row struct {
		Code        string     `db:"order_code"`
		FirstSeenAt time.Time  `db:"first_seen_at"`
		LastEventAt *time.Time `db:"last_event_at"`
		ChangedAt   *time.Time `db:"changed_at"`
		SyncedAt    *time.Time `db:"last_synced_at"`
	}
	back := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return dbTime(t.Add(-d))
	}
	var n int
	err := db.inTx(ctx, "backdate the orders of "+account, func(tx *sqlx.Tx) error {
		var rows []row
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT order_code, first_seen_at, last_event_at, changed_at, last_synced_at FROM orders WHERE account = ?`), account); err != nil {
			return err
		}
		stmt, err := tx.PreparexContext(ctx, db.rebind(`UPDATE orders SET first_seen_at = ?, last_event_at = ?, changed_at = ?, last_synced_at = ?
WHERE account = ? AND order_code = ?`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, back(&r.FirstSeenAt), back(r.LastEventAt), back(r.ChangedAt), back(r.SyncedAt), account, r.Code); err != nil {
				return err
			}
		}
		n = len(rows)
		return nil
	})
	return n, err
}
