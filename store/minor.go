package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// minorAmount is an order amount as the integer of minor units the
// reporting views carry (ordersync.MinorAmount), or NULL when no integer
// says it exactly.
func minorAmount(a ordersync.Amount, currency string) any {
	n, ok := ordersync.MinorAmount(a, currency)
	if !ok {
		return nil
	}
	return n
}

// backfillMinor writes the minor-unit columns; PostgreSQL reads VALUES
// parameters as text, hence the casts.
var backfillMinor = rowsSQL{
	prefix: `UPDATE orders SET minor_units = CAST(v.column2 AS INTEGER),
    subtotal_minor = CAST(v.column3 AS BIGINT), shipping_amount_minor = CAST(v.column4 AS BIGINT),
    discount_amount_minor = CAST(v.column5 AS BIGINT), surcharge_amount_minor = CAST(v.column6 AS BIGINT),
    total_minor = CAST(v.column7 AS BIGINT) FROM (VALUES `,
	cols:   7,
	suffix: `) AS v WHERE orders.id = CAST(v.column1 AS BIGINT)`,
}

// backfillMinorUnits fills the minor-unit columns of orders mirrored before
// migration 00011, when its mark says they are pending, a thousand orders
// per transaction, then clears the mark. It runs under the migration lock.
func (db *DB) backfillMinorUnits(ctx context.Context) error {
	type row struct {
		ID        int64             `db:"id"`
		Currency  string            `db:"store_currency_code"`
		Subtotal  *ordersync.Amount `db:"subtotal"`
		Shipping  *ordersync.Amount `db:"shipping_amount"`
		Discount  *ordersync.Amount `db:"discount_amount"`
		Surcharge *ordersync.Amount `db:"surcharge_amount"`
		Total     *ordersync.Amount `db:"total"`
	}
	// text is a column as VALUES takes it: decimal text, or NULL.
	text := func(a *ordersync.Amount, currency string) any {
		if a == nil {
			return nil
		}
		if n, ok := ordersync.MinorAmount(*a, currency); ok {
			return strconv.FormatInt(n, 10)
		}
		return nil
	}
	return db.backfill(ctx, "minor-unit columns", "minor_backfill", func(tx *sqlx.Tx, after int64, limit int) (int64, int, error) {
		var rows []row
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT id, store_currency_code, subtotal, shipping_amount, discount_amount, surcharge_amount, total
FROM orders WHERE id > ? AND raw_document IS NOT NULL ORDER BY id LIMIT ?`), after, limit); err != nil || len(rows) == 0 {
			return after, 0, err
		}
		values := make([][]any, len(rows))
		for i, r := range rows {
			c := r.Currency
			values[i] = []any{strconv.FormatInt(r.ID, 10), strconv.Itoa(ordersync.MinorScale(c)),
				text(r.Subtotal, c), text(r.Shipping, c), text(r.Discount, c), text(r.Surcharge, c), text(r.Total, c)}
		}
		if err := db.execRows(ctx, tx, backfillMinor, values); err != nil {
			return after, 0, err
		}
		// total_minor places the orders in report_buckets: the indexer
		// counts them again.
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return rows[len(rows)-1].ID, len(rows), db.noteChanges(ctx, tx, ids, dbTime(time.Now()))
	})
}
