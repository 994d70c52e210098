package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// quarterHour is the span of the report's buckets, in seconds: every
// zone's offset from UTC in use today is a whole number of quarter hours
// (TestZoneOffsetsQuarterHours), so each of its days is a run of whole
// buckets.
const quarterHour = 15 * 60

// reportBucketsSQL sums the orders a figure's query selects (rowsSQL's
// FROM and WHERE, the instant placing each one in a day at), which must
// have a total_minor, per quarter hour of UTC since lo (the bucket: whole
// seconds since lo, divided; lo is a quarter hour), kind and currency.
// Integer arithmetic on each instant, no zone: Go places the buckets in
// the days.
func (db *DB) reportBucketsSQL(at, kind, from string) string {
	bucket := fmt.Sprintf(`(unixepoch(%s) - ?) / %d`, at, quarterHour)
	if db.dialect == DialectPostgres {
		bucket = fmt.Sprintf(`floor((extract(epoch FROM %s) - ?) / %d)::bigint`, at, quarterHour)
	}
	return fmt.Sprintf(`SELECT %s AS bucket, %s AS kind, store_currency_code AS currency, COUNT(*) AS n, SUM(total_minor) AS minor %s
  AND total_minor IS NOT NULL
GROUP BY 1, 2, 3`, bucket, kind, from)
}

// The figures' FROM and WHERE for reportBucketsSQL, with the instant and
// the kind of each order counted (ordersync.ReportKind; a cancellation
// after the payment is a reversal, one before a payment learned later
// neither). Their rows are those of the figures' queries above.
var (
	reportCreatedFrom = `FROM orders
WHERE account = ? AND created_at >= ? AND created_at < ?`
	reportPaidFrom = `FROM orders
WHERE account = ? AND paid_at >= ? AND paid_at < ?`
	reportFinalizedFrom = reportFinalizedSQL[strings.Index(reportFinalizedSQL, "FROM "):]
	reportCancelledFrom = reportCancelledSQL[strings.Index(reportCancelledSQL, "FROM "):] + `
  AND (o.paid_at IS NULL OR o.paid_at <= h.at)`
	reportCancelledKind = fmt.Sprintf(`CASE WHEN o.paid_at IS NULL THEN %d ELSE %d END`, ordersync.ReportCancelled, ordersync.ReportReversed)
)

// reportBucket is one quarter hour's orders of one kind and currency.
type reportBucket struct {
	Bucket   int64  `db:"bucket"`
	Kind     int    `db:"kind"`
	Currency string `db:"currency"`
	N        int    `db:"n"`
	Minor    int64  `db:"minor"`
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
	return db.dailyTotals(ctx, params, reportByBuckets)
}

// How dailyTotals reads: every order one by one, which the others must
// agree with (TestDailyTotalsSums); the created and paid figures summed by
// the database a query per day; or every figure summed by the database
// per quarter hour of UTC in one query each.
type reportMode int

const (
	reportOneByOne reportMode = iota
	reportByDay
	reportByBuckets
)

// dailyTotals is DailyTotals read as mode says. A zone whose days do not
// start on quarter hours of UTC (a local mean time of the past) is read
// by day instead of by buckets.
func (db *DB) dailyTotals(ctx context.Context, params ordersync.DailyTotalsParams, mode reportMode) (ordersync.DailyTotals, error) {
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
		if mode == reportByBuckets && !onQuarterHours(days) {
			mode = reportByDay
		}
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
		// unknown are the currencies of a figure's sums that this binary
		// does not know: their orders are read one by one.
		unknown := map[string]bool{}
		readRest := func(what, rowsSQL string, each func(r reportRow)) error {
			for _, currency := range slices.Sorted(maps.Keys(unknown)) {
				if err := read(what, rowsSQL+reportCurrencySQL, each, currency); err != nil {
					return err
				}
			}
			clear(unknown)
			return read(what, rowsSQL+reportUnsummedSQL, each)
		}
		// bucketed reads a figure's orders with a total_minor as the
		// database's sums per quarter hour, and the others one by one.
		bucketed := func(what, at, kind, from, rowsSQL string, each func(r reportRow)) error {
			var got []reportBucket
			start := days[0].Start.Unix()
			if err := tx.SelectContext(ctx, &got, db.rebind(db.reportBucketsSQL(at, kind, from)), start, params.Account, lo, hi); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			for _, b := range got {
				if _, ok := ordersync.MinorUnits(b.Currency); !ok {
					unknown[b.Currency] = true
					continue
				}
				entries = append(entries, ordersync.ReportEntry{Kind: ordersync.ReportKind(b.Kind), At: time.Unix(start+b.Bucket*quarterHour, 0),
					Currency: b.Currency, Total: ordersync.AmountFromMinor(b.Minor, ordersync.MinorScale(b.Currency)), Count: b.N})
			}
			return readRest(what, rowsSQL, each)
		}
		summed := func(what, column, rowsSQL string, kind ordersync.ReportKind) error {
			switch mode {
			case reportOneByOne:
				return read(what, rowsSQL, entry(kind))
			case reportByBuckets:
				from := reportCreatedFrom
				if column == "paid_at" {
					from = reportPaidFrom
				}
				return bucketed(what, column, fmt.Sprint(int(kind)), from, rowsSQL, entry(kind))
			}
			stmt, err := tx.PreparexContext(ctx, db.rebind(reportSumsSQL(column)))
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			defer stmt.Close()
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
			return readRest(what, rowsSQL, entry(kind))
		}
		if err := summed("created", "created_at", reportCreatedSQL, ordersync.ReportCreated); err != nil {
			return err
		}
		if err := summed("paid", "paid_at", reportPaidSQL, ordersync.ReportPaid); err != nil {
			return err
		}
		cancelled := func(r reportRow) {
			switch {
			case r.PaidAt == nil:
				entry(ordersync.ReportCancelled)(r)
			case !r.PaidAt.After(r.At):
				entry(ordersync.ReportReversed)(r)
			}
			// Cancelled before a payment learned later: neither.
		}
		if mode == reportByBuckets {
			if err := bucketed("finalized", "h.at", fmt.Sprint(int(ordersync.ReportFinalized)), reportFinalizedFrom, reportFinalizedSQL,
				entry(ordersync.ReportFinalized)); err != nil {
				return err
			}
			if err := bucketed("cancelled", "h.at", reportCancelledKind, reportCancelledFrom, reportCancelledSQL, cancelled); err != nil {
				return err
			}
		} else {
			if err := read("finalized", reportFinalizedSQL, entry(ordersync.ReportFinalized)); err != nil {
				return err
			}
			if err := read("cancelled", reportCancelledSQL, cancelled); err != nil {
				return err
			}
		}
		out = ordersync.DailyTotals{TZ: loc.String(), Days: ordersync.TallyDays(days, entries)}
		return nil
	})
	return out, err
}

// onQuarterHours reports whether every day starts and ends on a quarter
// hour of UTC, so that it is a run of whole buckets.
func onQuarterHours(days []ordersync.DaySpan) bool {
	for _, d := range days {
		if d.Start.Unix()%quarterHour != 0 || d.End.Unix()%quarterHour != 0 {
			return false
		}
	}
	return true
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
