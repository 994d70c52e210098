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

// The queries of DailyTotals. Each reads the orders one figure counts in
// [lo, hi), with the instant that places each in a day. An order counts
// once per figure: finalized by its first transition to FINALIZED, a
// cancellation by the first one after its payment (or at all, when it was
// never paid).
var (
	reportCreatedSQL = `SELECT created_at AS at, store_currency_code AS currency, total FROM orders
WHERE account = ? AND created_at >= ? AND created_at < ? AND total IS NOT NULL`
	reportPaidSQL = `SELECT paid_at AS at, store_currency_code AS currency, total FROM orders
WHERE account = ? AND paid_at >= ? AND paid_at < ? AND total IS NOT NULL`
	reportFinalizedSQL = `SELECT h.at, o.store_currency_code AS currency, o.total FROM status_history h JOIN orders o ON o.id = h.order_row
WHERE o.account = ? AND h.to_status = 'FINALIZED' AND h.at >= ? AND h.at < ? AND o.total IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'FINALIZED' AND e.id < h.id)`
	reportCancelledSQL = `SELECT h.at, o.paid_at, o.store_currency_code AS currency, o.total FROM status_history h JOIN orders o ON o.id = h.order_row
WHERE o.account = ? AND h.to_status = 'CANCELLED' AND h.at >= ? AND h.at < ? AND o.total IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'CANCELLED' AND e.id < h.id
                  AND (o.paid_at IS NULL OR e.at >= o.paid_at))`
)

// reportRow is one order counted by a query of DailyTotals.
type reportRow struct {
	At       time.Time        `db:"at"`
	PaidAt   *time.Time       `db:"paid_at"`
	Currency string           `db:"currency"`
	Total    ordersync.Amount `db:"total"`
}

// DailyTotals sums the account's orders per calendar day of the report's
// zone and per currency, exactly (ordersync.TallyDays): created (by the
// service's creation time), paid (by paid_at), cancelled never paid,
// finalized, and reversed (paid, then cancelled: on the cancellation's
// day). Without a zone the days are those of the store's time zone of the
// account's latest order, else UTC. It reads in one transaction.
func (db *DB) DailyTotals(ctx context.Context, params ordersync.DailyTotalsParams) (ordersync.DailyTotals, error) {
	var out ordersync.DailyTotals
	if err := params.Validate(); err != nil {
		return out, err
	}
	err := db.inReadTx(ctx, "read daily totals", func(tx *sqlx.Tx) error {
		loc := params.Location
		if loc == nil {
			var err error
			if loc, err = storeLocation(ctx, db, tx, params.Account); err != nil {
				return err
			}
		}
		days := ordersync.ReportDays(params.From, params.To, loc)
		lo, hi := dbTime(days[0].Start), dbTime(days[len(days)-1].End)
		var entries []ordersync.ReportEntry
		read := func(what, query string, each func(r reportRow)) error {
			rows, err := tx.QueryxContext(ctx, db.rebind(query), params.Account, lo, hi)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			defer rows.Close()
			for rows.Next() {
				var r reportRow
				if err := rows.StructScan(&r); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				each(r)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		entry := func(kind ordersync.ReportKind) func(r reportRow) {
			return func(r reportRow) {
				entries = append(entries, ordersync.ReportEntry{Kind: kind, At: r.At, Currency: r.Currency, Total: r.Total})
			}
		}
		if err := read("created", reportCreatedSQL, entry(ordersync.ReportCreated)); err != nil {
			return err
		}
		if err := read("paid", reportPaidSQL, entry(ordersync.ReportPaid)); err != nil {
			return err
		}
		if err := read("finalized", reportFinalizedSQL, entry(ordersync.ReportFinalized)); err != nil {
			return err
		}
		err := read("cancelled", reportCancelledSQL, func(r reportRow) {
			switch {
			case r.PaidAt == nil:
				entry(ordersync.ReportCancelled)(r)
			case !r.PaidAt.After(r.At):
				entry(ordersync.ReportReversed)(r)
			}
			// Cancelled before a payment learned later: neither.
		})
		if err != nil {
			return err
		}
		out = ordersync.DailyTotals{TZ: loc.String(), Days: ordersync.TallyDays(days, entries)}
		return nil
	})
	return out, err
}

// storeLocation is the time zone of the store of the account's latest
// fetched order; UTC when there is none or it is not a zone this binary
// knows.
func storeLocation(ctx context.Context, db *DB, tx *sqlx.Tx, account string) (*time.Location, error) {
	var name string
	err := tx.GetContext(ctx, &name, db.rebind(`SELECT store_timezone FROM orders
WHERE account = ? AND store_timezone <> '' ORDER BY id DESC LIMIT 1`), account)
	if errors.Is(err, sql.ErrNoRows) {
		return time.UTC, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the store's time zone: %w", err)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC, nil
	}
	return loc, nil
}

var _ ordersync.Reports = (*DB)(nil)
