package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// The queries of DailyTotals. Each reads the orders one figure counts in
// [lo, hi), with the instant that places each in a day. An order counts
// once per figure: finalized by its first transition to FINALIZED, a
// cancellation by the first one after its payment (or at all, when it was
// never paid). The created and paid figures are summed by the database
// per day (reportSumsSQL) for the orders whose total_minor says their
// total; these read the others, and those of a currency whose total_minor sums cannot
// stand in for the decimal sum (reportCurrencySQL).
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
	reportUnsummedSQL = ` AND total_minor IS NULL`
	reportCurrencySQL = ` AND total_minor IS NOT NULL AND store_currency_code = ?`
)

// reportSumsSQL counts the account's orders whose column (created_at or
// paid_at) is in [lo, hi), one day of the report, and sums their
// total_minor per currency: an index holds every column it reads
// (migration 00014), so it reads neither the orders' rows nor one Go value
// per order.
func reportSumsSQL(column string) string {
	return fmt.Sprintf(`SELECT store_currency_code AS currency, COUNT(*) AS n, SUM(total_minor) AS minor FROM orders
WHERE account = ? AND %s >= ? AND %s < ? AND total_minor IS NOT NULL
GROUP BY store_currency_code`, column, column)
}

// reportSum is one day's orders of one currency in a figure.
type reportSum struct {
	Currency string `db:"currency"`
	N        int    `db:"n"`
	Minor    int64  `db:"minor"`
}

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
	return db.dailyTotals(ctx, params, true)
}

// dailyTotals is DailyTotals; without sums it reads every order one by
// one, which the database's sums must agree with (TestDailyTotalsSums).
func (db *DB) dailyTotals(ctx context.Context, params ordersync.DailyTotalsParams, sums bool) (ordersync.DailyTotals, error) {
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
		read := func(what, query string, each func(r reportRow), args ...any) error {
			rows, err := tx.QueryxContext(ctx, db.rebind(query), append([]any{params.Account, lo, hi}, args...)...)
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
		// summed reads a figure's orders with a total_minor as the
		// database's sums, a query per day, and the others one by one. A
		// currency this binary does not know keeps the digits of its
		// totals in the sum (ordersync.TallyDays), which the integers lost:
		// its orders are read one by one too.
		summed := func(what, column, rowsSQL string, kind ordersync.ReportKind) error {
			if !sums {
				return read(what, rowsSQL, entry(kind))
			}
			stmt, err := tx.PreparexContext(ctx, db.rebind(reportSumsSQL(column)))
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			defer stmt.Close()
			unknown := map[string]bool{}
			for _, d := range days {
				var got []reportSum
				if err := stmt.SelectContext(ctx, &got, params.Account, dbTime(d.Start), dbTime(d.End)); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				for _, s := range got {
					if _, ok := ordersync.MinorUnits(s.Currency); !ok {
						unknown[s.Currency] = true
						continue
					}
					entries = append(entries, ordersync.ReportEntry{Kind: kind, At: d.Start, Currency: s.Currency,
						Total: ordersync.AmountFromMinor(s.Minor, ordersync.MinorScale(s.Currency)), Count: s.N})
				}
			}
			for _, currency := range slices.Sorted(maps.Keys(unknown)) {
				if err := read(what, rowsSQL+reportCurrencySQL, entry(kind), currency); err != nil {
					return err
				}
			}
			return read(what, rowsSQL+reportUnsummedSQL, entry(kind))
		}
		if err := summed("created", "created_at", reportCreatedSQL, ordersync.ReportCreated); err != nil {
			return err
		}
		if err := summed("paid", "paid_at", reportPaidSQL, ordersync.ReportPaid); err != nil {
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

// reportZoneSQL reads the account's orders backwards by row id
// (orders_account_id, migration 00014) to the latest with a zone.
const reportZoneSQL = `SELECT store_timezone FROM orders
WHERE account = ? AND store_timezone <> '' ORDER BY id DESC LIMIT 1`

// storeLocation is the time zone of the store of the account's latest
// fetched order; UTC when there is none or it is not a zone this binary
// knows.
func storeLocation(ctx context.Context, db *DB, tx *sqlx.Tx, account string) (*time.Location, error) {
	var name string
	err := tx.GetContext(ctx, &name, db.rebind(reportZoneSQL), account)
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
