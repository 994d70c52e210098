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

// The queries of DailyTotals that read orders one by one. Each reads the
// orders one figure counts in [lo, hi), with the instant that places each
// in a day. An order counts once per figure: finalized by its first
// transition to FINALIZED, a cancellation by the first one after its
// payment (or at all, when it was never paid); internal_report_figures
// (migration 00018) says the same. The report reads the sums of
// report_buckets (reportBucketsSQL) instead, and these only for the
// orders whose total_minor does not say their total (reportUnsummedSQL)
// and those of a currency whose total_minor sums cannot stand in for the
// decimal sum (reportCurrencySQL).
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
	reportCollectedSQL = `SELECT paid_at AS at, store_currency_code AS currency, total FROM orders
WHERE account = ? AND paid_at >= ? AND paid_at < ? AND total IS NOT NULL AND status IN ('PAID', 'FINALIZED')`
	reportUnsummedSQL = ` AND total_minor IS NULL`
	reportCurrencySQL = ` AND total_minor IS NOT NULL AND store_currency_code = ?`
)

// reportBucketsSQL sums one day of the report, quarter hours [lo, hi) of
// report_buckets, per figure and currency: about a hundred rows of its
// primary key a day, whatever the day's orders.
const reportBucketsSQL = `SELECT figure, currency, SUM(summed) AS n, SUM(total_minor) AS minor, SUM(unsummed) AS unsummed
FROM report_buckets WHERE account = ? AND bucket >= ? AND bucket < ?
GROUP BY figure, currency`

// bucketSeconds is the span of a report_buckets row: every zone's offset
// from UTC is a whole number of quarter hours.
const bucketSeconds = 15 * 60

// reportSum is one day's orders of one currency in a figure.
type reportSum struct {
	Figure   string `db:"figure"`
	Currency string `db:"currency"`
	N        int64  `db:"n"`
	Minor    int64  `db:"minor"`
	Unsummed int64  `db:"unsummed"`
}

// reportFigures are report_buckets' figures, and the query that reads
// their orders one by one (cancelled and reversed share one).
var reportFigures = map[string]struct {
	kind  ordersync.ReportKind
	query string
}{
	"created":   {ordersync.ReportCreated, "created"},
	"paid":      {ordersync.ReportPaid, "paid"},
	"finalized": {ordersync.ReportFinalized, "finalized"},
	"cancelled": {ordersync.ReportCancelled, "cancelled"},
	"reversed":  {ordersync.ReportReversed, "cancelled"},
	"collected": {ordersync.ReportCollected, "collected"},
}

// reportQueries name the queries that read the figures' orders one by one.
var reportQueries = []string{"created", "paid", "finalized", "cancelled", "collected"}

// reportRow is one order counted by a query of DailyTotals.
type reportRow struct {
	At       time.Time        `db:"at"`
	PaidAt   *time.Time       `db:"paid_at"`
	Currency string           `db:"currency"`
	Total    ordersync.Amount `db:"total"`
}

// bucketed says whether every day of the report is a whole range of
// report_buckets: days that start on a quarter hour of UTC, after the
// first of 1970 (the buckets of earlier instants are not floors).
func bucketed(days []ordersync.DaySpan) bool {
	for _, d := range days {
		if d.Start.Unix() < 24*60*60 || d.Start.Unix()%bucketSeconds != 0 || d.End.Unix()%bucketSeconds != 0 {
			return false
		}
	}
	return true
}

// DailyTotals sums the account's orders per calendar day of the report's
// zone and per currency, exactly (ordersync.TallyDays): created (by the
// service's creation time), paid (by paid_at), cancelled never paid,
// finalized, and reversed (paid, then cancelled: on the cancellation's
// day). Without a zone the days are those of the store's time zone of the
// account's latest order, else UTC. It reads in one transaction.
// Its AsOf and Behind say how current report_buckets is, read before the
// figures, so that the figures are at least as current as they say.
func (db *DB) DailyTotals(ctx context.Context, params ordersync.DailyTotalsParams) (ordersync.DailyTotals, error) {
	status, err := db.IndexStatus(ctx)
	if err != nil {
		return ordersync.DailyTotals{}, err
	}
	out, err := db.dailyTotals(ctx, params, true)
	out.AsOf, out.Behind = status.AsOf.Truncate(time.Second), status.Behind()
	return out, err
}

// dailyTotals is DailyTotals; without sums it reads every order one by
// one, which report_buckets' sums must agree with (TestDailyTotalsSums).
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
		readCancelled := func(extra string, args ...any) error {
			return read("cancelled", reportCancelledSQL+extra, func(r reportRow) {
				switch {
				case r.PaidAt == nil:
					entry(ordersync.ReportCancelled)(r)
				case !r.PaidAt.After(r.At):
					entry(ordersync.ReportReversed)(r)
				}
				// Cancelled before a payment learned later: neither.
			}, args...)
		}
		queries := map[string]func(extra string, args ...any) error{
			"created": func(extra string, args ...any) error {
				return read("created", reportCreatedSQL+extra, entry(ordersync.ReportCreated), args...)
			},
			"paid": func(extra string, args ...any) error {
				return read("paid", reportPaidSQL+extra, entry(ordersync.ReportPaid), args...)
			},
			"finalized": func(extra string, args ...any) error {
				return read("finalized", reportFinalizedSQL+extra, entry(ordersync.ReportFinalized), args...)
			},
			"cancelled": readCancelled,
			"collected": func(extra string, args ...any) error {
				return read("collected", reportCollectedSQL+extra, entry(ordersync.ReportCollected), args...)
			},
		}
		if !sums || !bucketed(days) {
			for _, q := range reportQueries {
				if err := queries[q](""); err != nil {
					return err
				}
			}
			out = ordersync.DailyTotals{TZ: loc.String(), Days: ordersync.TallyDays(days, entries)}
			return nil
		}
		// The sums of report_buckets, a query per day. The orders they do
		// not sum (unsummed) are read one by one, and so are those of a
		// currency this binary does not know, whose sum keeps the digits
		// of their totals (ordersync.TallyDays), which the integers lost.
		stmt, err := tx.PreparexContext(ctx, db.rebind(reportBucketsSQL))
		if err != nil {
			return fmt.Errorf("read daily totals: %w", err)
		}
		defer stmt.Close()
		unsummed, unknown := map[string]bool{}, map[string]map[string]bool{}
		for _, d := range days {
			var got []reportSum
			if err := stmt.SelectContext(ctx, &got, params.Account, d.Start.Unix()/bucketSeconds, d.End.Unix()/bucketSeconds); err != nil {
				return fmt.Errorf("read daily totals: %w", err)
			}
			for _, s := range got {
				f, ok := reportFigures[s.Figure]
				if !ok {
					return fmt.Errorf("read daily totals: report_buckets has a figure %q", s.Figure)
				}
				if s.Unsummed > 0 {
					unsummed[f.query] = true
				}
				if s.N == 0 {
					continue
				}
				if _, ok := ordersync.MinorUnits(s.Currency); !ok {
					if unknown[f.query] == nil {
						unknown[f.query] = map[string]bool{}
					}
					unknown[f.query][s.Currency] = true
					continue
				}
				entries = append(entries, ordersync.ReportEntry{Kind: f.kind, At: d.Start, Currency: s.Currency,
					Total: ordersync.AmountFromMinor(s.Minor, ordersync.MinorScale(s.Currency)), Count: int(s.N)})
			}
		}
		for _, q := range reportQueries {
			for _, currency := range slices.Sorted(maps.Keys(unknown[q])) {
				if err := queries[q](reportCurrencySQL, currency); err != nil {
					return err
				}
			}
			if unsummed[q] {
				if err := queries[q](reportUnsummedSQL); err != nil {
					return err
				}
			}
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
