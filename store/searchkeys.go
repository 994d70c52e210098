package store

import (
	"context"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/ordersync/ordersync"
)

// The widths of totalKey: every amount ordersync.ParseAmount accepts fits.
const (
	totalKeyIntegerDigits  = ordersync.MaxAmountIntegerDigits
	totalKeyFractionDigits = ordersync.MaxAmountFractionDigits
)

// totalKey is an amount as fixed-width text whose byte order is the
// numbers' order, so that an index on TEXT filters and sorts totals exactly
// in both dialects: "1" then the integer and fraction digits zero-padded for
// zero and above, "0" then the nines' complement of those digits below
// zero. 17.99 and 17.990 have the same key.
func totalKey(a ordersync.Amount) string {
	s := a.String()
	neg := a.Sign() < 0
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	b.Grow(1 + totalKeyIntegerDigits + totalKeyFractionDigits)
	digits := strings.Repeat("0", totalKeyIntegerDigits-len(whole)) + whole + frac + strings.Repeat("0", totalKeyFractionDigits-len(frac))
	if !neg {
		b.WriteByte('1')
		b.WriteString(digits)
		return b.String()
	}
	b.WriteByte('0')
	for i := 0; i < len(digits); i++ {
		b.WriteByte('9' - digits[i] + '0')
	}
	return b.String()
}

// deleteTokens deletes orders' words before the indexer writes them again.
var deleteTokens = rowsSQL{prefix: `DELETE FROM order_name_tokens WHERE order_row IN (`, cols: 1, suffix: `)`}

// tokenKeyColumns are the columns of orders that order_name_tokens repeats,
// by the same names, so that the listing's conditions read alike on both.
var tokenKeyColumns = []string{"status", "store_currency_code", "created_at", "paid_at", "total_key"}

// The statements of backfillSearch: VALUES columns are column1, column2 in
// both dialects, and PostgreSQL reads their parameters as text, so the row
// id goes as its decimal text. The words' other columns are filled by
// backfillNameTokenKeys, which runs after it.
var (
	backfillTotalKeys = rowsSQL{prefix: `UPDATE orders SET total_key = v.column2 FROM (VALUES `, cols: 2,
		suffix: `) AS v WHERE orders.id = CAST(v.column1 AS BIGINT)`}
	backfillTokens = rowsSQL{prefix: `INSERT INTO order_name_tokens (account, token, order_row) VALUES `, cols: 3, suffix: ` ON CONFLICT DO NOTHING`}
)

// backfillSearch fills total_key and the name tokens of orders mirrored
// before migration 00009, when its mark says they are pending, a thousand
// orders per transaction, then clears the mark. It runs under the
// migration lock.
func (db *DB) backfillSearch(ctx context.Context) error {
	type row struct {
		ID        int64             `db:"id"`
		Account   string            `db:"account"`
		Total     *ordersync.Amount `db:"total"`
		BuyerName string            `db:"buyer_name"`
	}
	return db.backfill(ctx, "search columns", "search_backfill", func(tx *sqlx.Tx, after int64, limit int) (int64, int, error) {
		var rows []row
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT id, account, total, buyer_name FROM orders
WHERE id > ? AND raw_document IS NOT NULL ORDER BY id LIMIT ?`), after, limit); err != nil || len(rows) == 0 {
			return after, 0, err
		}
		var keys, tokens [][]any
		for _, r := range rows {
			if r.Total != nil {
				keys = append(keys, []any{strconv.FormatInt(r.ID, 10), totalKey(*r.Total)})
			}
			for _, t := range ordersync.NameTokens(r.BuyerName) {
				tokens = append(tokens, []any{r.Account, t, r.ID})
			}
		}
		if err := db.execRows(ctx, tx, backfillTotalKeys, keys); err != nil {
			return after, 0, err
		}
		return rows[len(rows)-1].ID, len(rows), db.execRows(ctx, tx, backfillTokens, tokens)
	})
}

// backfillNameTokenKeys copies tokenKeyColumns from the orders to their
// words written before migration 00013, when its mark says they are
// pending, a thousand orders per transaction, then clears the mark. It
// runs under the migration lock, after backfillSearch.
func (db *DB) backfillNameTokenKeys(ctx context.Context) error {
	set := make([]string, len(tokenKeyColumns))
	for i, c := range tokenKeyColumns {
		set[i] = c + " = o." + c
	}
	update := db.rebind(`UPDATE order_name_tokens SET ` + strings.Join(set, ", ") + ` FROM orders o
WHERE o.id = order_name_tokens.order_row AND order_name_tokens.order_row > ? AND order_name_tokens.order_row <= ?`)
	return db.backfill(ctx, "name words' sort keys", "name_token_backfill", func(tx *sqlx.Tx, after int64, limit int) (int64, int, error) {
		var ids []int64
		if err := tx.SelectContext(ctx, &ids, db.rebind(`SELECT id FROM orders
WHERE id > ? AND raw_document IS NOT NULL ORDER BY id LIMIT ?`), after, limit); err != nil || len(ids) == 0 {
			return after, 0, err
		}
		last := ids[len(ids)-1]
		_, err := tx.ExecContext(ctx, update, after, last)
		return last, len(ids), err
	})
}
