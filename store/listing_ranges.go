package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// The orders the daily totals' transition figures count in [?, ?), each
// once, as a subquery of their row ids (order_row): the rules of
// DailyTotals' reportFinalizedSQL and reportCancelledSQL, which count an
// order once per figure, at its first finalization, its first
// cancellation when never paid, and its first cancellation after the
// payment when paid.
// The cancelled and reversed ones join the order for its paid time where
// %s stands after "orders o" (countedSQL).
const (
	countedFinalizedSQL = `SELECT h.order_row FROM status_history h WHERE h.to_status = 'FINALIZED' AND h.at >= ? AND h.at < ?
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'FINALIZED' AND e.id < h.id)`
	countedCancelledSQL = `SELECT h.order_row FROM status_history h JOIN orders o%s ON o.id = h.order_row
WHERE o.paid_at IS NULL AND h.to_status = 'CANCELLED' AND h.at >= ? AND h.at < ?
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'CANCELLED' AND e.id < h.id)`
	countedReversedSQL = `SELECT h.order_row FROM status_history h JOIN orders o%s ON o.id = h.order_row
WHERE o.paid_at IS NOT NULL AND h.to_status = 'CANCELLED' AND h.at >= o.paid_at AND h.at >= ? AND h.at < ?
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'CANCELLED' AND e.id < h.id
                  AND e.at >= o.paid_at)`
)

// countedSQL is a transition range's subquery in db's dialect. A month's
// cancellations (28,000 on two stores of 1,000,000 orders) each need
// their order's paid time: SQLite would read it from the order's row,
// which it seeks by its integer key whatever index holds the column, a
// page of the table for each; it is told to read the index on (row, paid
// time) (migration 34), where the month's orders take a few hundred pages.
func (db *DB) countedSQL(sql string) string {
	if !strings.Contains(sql, "%s") {
		return sql
	}
	if db.dialect == DialectSQLite {
		return fmt.Sprintf(sql, " INDEXED BY orders_row_paid")
	}
	return fmt.Sprintf(sql, "")
}

// countedRange is one of a filter's transition ranges: the subquery of
// the row ids of its orders and its two arguments.
type countedRange struct {
	sql  string
	args []any
}

// countedRanges are f's transition ranges, none when it has none.
func (db *DB) countedRanges(f ordersync.OrderFilter) []countedRange {
	var out []countedRange
	for _, r := range []struct {
		sql      string
		from, to time.Time
	}{{countedCancelledSQL, f.CancelledFrom, f.CancelledTo},
		{countedFinalizedSQL, f.FinalizedFrom, f.FinalizedTo}, {countedReversedSQL, f.ReversedFrom, f.ReversedTo}} {
		if r.from.IsZero() && r.to.IsZero() {
			continue
		}
		// An open bound is the widest a time column holds.
		from, to := r.from, r.to
		if from.IsZero() {
			from = time.Unix(0, 0)
		}
		if to.IsZero() {
			to = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		out = append(out, countedRange{db.countedSQL(r.sql), []any{dbTime(from), dbTime(to)}})
	}
	return out
}

// countedConditions are the conditions of ranges on the order's row id,
// or nil when there are none.
func countedConditions(ranges []countedRange) orderPart {
	if len(ranges) == 0 {
		return nil
	}
	return func(id string) ([]string, []any) {
		var (
			conds []string
			args  []any
		)
		for _, r := range ranges {
			conds = append(conds, id+" IN ("+r.sql+")")
			args = append(args, r.args...)
		}
		return conds, args
	}
}
