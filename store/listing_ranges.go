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
// time, created time, store) (migration 36), where the month's orders
// take a few hundred pages.
func (db *DB) countedSQL(sql string) string {
	if !strings.Contains(sql, "%s") {
		return sql
	}
	if db.dialect == DialectSQLite {
		return fmt.Sprintf(sql, " INDEXED BY orders_row_times")
	}
	return fmt.Sprintf(sql, "")
}

// rowTimes is how a transition range's list seeks each of its orders by
// row (see countedSQL): on SQLite in the index on (row, paid time, created
// time, store), when that holds every column the list reads (the created
// or paid sort, no condition on the status, currency or total); "" lets
// SQLite read the order's row.
func (db *DB) rowTimes(f ordersync.OrderFilter, col string) string {
	if db.dialect != DialectSQLite || col != "created_at" && col != "paid_at" || len(f.Statuses) > 0 || f.Currency != "" ||
		f.MinTotal != nil || f.MaxTotal != nil {
		return ""
	}
	return " INDEXED BY orders_row_times"
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
		figure, sql string
		from, to    time.Time
	}{{"cancelled", countedCancelledSQL, f.CancelledFrom, f.CancelledTo},
		{"finalized", countedFinalizedSQL, f.FinalizedFrom, f.FinalizedTo}, {"reversed", countedReversedSQL, f.ReversedFrom, f.ReversedTo}} {
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
		out = append(out, db.figureRange(r.figure, db.countedSQL(r.sql), f.Account, from, to))
	}
	return out
}

// figureSQL selects, from the read side, the orders that count a figure
// in the buckets [?, ?) of report_order_figures (their quarter hours of
// Unix time), sought in its index on (figure, bucket, account, row).
const figureSQL = `SELECT order_row FROM report_order_figures WHERE figure = '%s' AND bucket >= ? AND bucket < ?`

// figureRange is the range [from, to) of a figure: the orders of the
// quarter hours wholly inside it from the read side, which keeps each
// order's figure and its quarter hour (the indexer's, as the daily totals
// count them), and those of a bound's part quarter hour, at most one at
// each end, by exact, the status history's rule. Read from the history
// alone, a month's range would read every cancellation of the month with
// its order's row and its earlier history (28,000 on two stores of
// 1,000,000 orders), for one store's list too. Like a search by name, the
// list shows the read side as of the indexer's position.
func (db *DB) figureRange(figure, exact, account string, from, to time.Time) countedRange {
	first, last := bucketOf(from), bucketOf(to)
	fromCut := !bucketStart(first).Equal(from)
	if fromCut {
		first++
	}
	sql := fmt.Sprintf(figureSQL, figure)
	args := []any{first, last}
	if account != "" {
		sql += ` AND account = ?`
		args = append(args, account)
	}
	if fromCut {
		end := bucketStart(first)
		if to.Before(end) {
			end = to
		}
		sql += " UNION ALL " + exact
		args = append(args, dbTime(from), dbTime(end))
	}
	if !bucketStart(last).Equal(to) && last >= first {
		sql += " UNION ALL " + exact
		args = append(args, dbTime(bucketStart(last)), dbTime(to))
	}
	return countedRange{sql, args}
}

// bucketOf is the quarter hour of Unix time that holds t, as
// report_order_figures numbers them (DB.bucketExpr).
func bucketOf(t time.Time) int64 {
	s := t.Unix() // whole seconds, rounded down
	b := s / 900
	if s%900 < 0 {
		b--
	}
	return b
}

// bucketStart is the instant bucket b begins.
func bucketStart(b int64) time.Time { return time.Unix(b*900, 0) }

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
