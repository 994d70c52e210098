package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// FindOrderByCode returns a fetched order with its raw document, line
// items, metadata and sync information. An order known only by a
// RecordOrderRef placeholder is not found: nothing was fetched yet.
func (db *DB) FindOrderByCode(ctx context.Context, account, orderCode string) (*ordersync.MirroredOrder, error) {
	var m *ordersync.MirroredOrder
	err := db.inReadTx(ctx, fmt.Sprintf("find order %s/%s", account, orderCode), func(tx *sqlx.Tx) error {
		var r orderRow
		if err := tx.GetContext(ctx, &r, db.rebind(`SELECT `+orderRowColumns+`, raw_document FROM orders
WHERE account = ? AND order_code = ? AND raw_document IS NOT NULL`), account, orderCode); err != nil {
			return err
		}
		m = r.mirrored()
		return db.loadDetails(ctx, tx, []int64{r.ID}, []*ordersync.MirroredOrder{m})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// LastFetches reads the last applied fetches of the account's orders
// codes and, from their status histories, their last status changes: one
// indexed read per lastFetchBatchMax codes, outside a transaction, since
// the pool reads them for every pull of webhooks. Orders never fetched are
// missing from the map.
func (db *DB) LastFetches(ctx context.Context, account string, codes []string) (map[string]ordersync.LastFetch, error) {
	op := fmt.Sprintf("read the last fetches of %d orders in %s", len(codes), account)
	out := make(map[string]ordersync.LastFetch, len(codes))
	for rest := codes; len(rest) > 0; {
		chunk := rest[:min(len(rest), lastFetchBatchMax)]
		rest = rest[len(chunk):]
		args, n := paddedArgs(account, chunk)
		query := `SELECT o.order_code, o.last_synced_at, o.status, h.at, h.cause FROM orders o
LEFT JOIN status_history h ON h.id = (SELECT MAX(id) FROM status_history WHERE order_row = o.id)
WHERE o.account = ? AND o.order_code IN (` + placeholders(n) + `) AND o.raw_document IS NOT NULL AND o.last_synced_at IS NOT NULL`
		var rows []struct {
			Code      string     `db:"order_code"`
			At        time.Time  `db:"last_synced_at"`
			Status    string     `db:"status"`
			ChangedAt *time.Time `db:"at"`
			Cause     *string    `db:"cause"`
		}
		if err := db.selectRead(ctx, &rows, query, args...); err != nil {
			return nil, translate(op, err)
		}
		for _, r := range rows {
			lf := ordersync.LastFetch{At: r.At, Status: ordersync.Status(r.Status)}
			if r.ChangedAt != nil && r.Cause != nil {
				lf.ChangedAt, lf.ChangeCause = *r.ChangedAt, ordersync.Cause(*r.Cause)
			}
			out[r.Code] = lf
		}
	}
	return out, nil
}

// lastFetchBatchMax bounds the codes of one LastFetches statement.
const lastFetchBatchMax = 512

// loadDetails fills the line items and metadata of orders, whose rows are
// rows (one to one).
func (db *DB) loadDetails(ctx context.Context, tx *sqlx.Tx, rows []int64, orders []*ordersync.MirroredOrder) error {
	if err := db.loadLineItems(ctx, tx, rows, orders); err != nil {
		return err
	}
	return db.loadMetadata(ctx, tx, rows, orders)
}

// loadLineItems fills the line items of orders, whose rows are rows (one
// to one), in their order, with one query: an export reads a thousand
// orders' lines at a time, and a query per few hundred orders cost it a
// round trip and a plan each.
func (db *DB) loadLineItems(ctx context.Context, tx *sqlx.Tx, rows []int64, orders []*ordersync.MirroredOrder) error {
	if len(rows) == 0 {
		return nil
	}
	byRow := make(map[int64]*ordersync.MirroredOrder, len(orders))
	for i, m := range orders {
		byRow[rows[i]] = m
	}
	in, arg := db.rowSet(rows)
	res, err := tx.QueryContext(ctx, db.rebind(`SELECT order_row, product_id, sku, name, price, promo_price, quantity, image_url, sub_total
FROM order_line_items WHERE `+in+` ORDER BY order_row, position`), arg)
	if err != nil {
		return fmt.Errorf("load line items: %w", err)
	}
	defer res.Close()
	for res.Next() {
		var (
			row       int64
			productID string
			it        ordersync.LineItem
		)
		if err := res.Scan(&row, &productID, &it.SKU, &it.Name, &it.Price, &it.PromoPrice, &it.Quantity, &it.ImageURL, &it.SubTotal); err != nil {
			return fmt.Errorf("load line items: %w", err)
		}
		it.ProductID = ordersync.ID(productID)
		m := byRow[row]
		m.Order.LineItems = append(m.Order.LineItems, it)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("load line items: %w", err)
	}
	return nil
}

// rowSet is a condition that order_row is one of rows, with its one
// argument: an array in PostgreSQL, a JSON array that json_each reads in
// SQLite. Either takes any number of rows as a single parameter.
func (db *DB) rowSet(rows []int64) (string, any) {
	if db.dialect == DialectPostgres {
		return "order_row = ANY(?)", rows
	}
	b := make([]byte, 0, len(rows)*8+2)
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r, 10)
	}
	return "order_row IN (SELECT value FROM json_each(?))", string(append(b, ']'))
}

// loadMetadata fills the metadata of orders, whose rows are rows (one to
// one), with one query per maxInParams orders.
func (db *DB) loadMetadata(ctx context.Context, tx *sqlx.Tx, rows []int64, orders []*ordersync.MirroredOrder) error {
	byRow := make(map[int64]*ordersync.MirroredOrder, len(orders))
	for i, m := range orders {
		byRow[rows[i]] = m
	}
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), maxInParams)]
		rows = rows[len(chunk):]
		args := make([]any, len(chunk))
		for i, r := range chunk {
			args[i] = r
		}
		var metadata []metadataRow
		if err := tx.SelectContext(ctx, &metadata, db.rebind(`SELECT order_row, name, value FROM order_metadata
WHERE order_row IN (`+placeholders(len(chunk))+`) ORDER BY order_row, position`), args...); err != nil {
			return fmt.Errorf("load metadata: %w", err)
		}
		for _, md := range metadata {
			m := byRow[md.OrderRow]
			m.Order.Metadata = append(m.Order.Metadata, ordersync.MetadataEntry{Name: md.Name, Value: md.Value})
		}
	}
	return nil
}

// StoreCurrency returns the currency code of the account's most recently
// recorded order that has one, or "" before any order was fetched. It reads
// one row from the newest end of the table, so a link's creation does not
// pay for the size of the mirror.
func (db *DB) StoreCurrency(ctx context.Context, account string) (string, error) {
	return db.newestStoreField(ctx, "read the store's currency", "store_currency_code", account)
}

// newestStoreField reads column (a store_* column of orders) of the
// account's most recently recorded order that has it set, or "" before any
// order has: one row from the newest end of the table.
func (db *DB) newestStoreField(ctx context.Context, op, column, account string) (string, error) {
	var value string
	err := db.inReadTx(ctx, op, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &value, db.rebind(`SELECT `+column+` FROM orders
WHERE account = ? AND `+column+` <> '' ORDER BY id DESC LIMIT 1`), account)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return value, err
}

// CountOrdersByStatus counts the mirror's orders per status; orders
// recorded but not fetched yet count under "". Every known status is
// present, with 0 when no order has it, so a gauge built on it drops to zero
// instead of keeping its last value. It reads only the status index, not the
// rows with their documents, which would cost about twenty times as much
// (BenchmarkCountOrdersByStatus).
func (db *DB) CountOrdersByStatus(ctx context.Context) (map[ordersync.Status]int, error) {
	counts := make(map[ordersync.Status]int, len(ordersync.Statuses))
	for _, s := range ordersync.Statuses {
		counts[s] = 0
	}
	err := db.inReadTx(ctx, "count orders by status", func(tx *sqlx.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT status, COUNT(*) FROM orders GROUP BY status`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				s string
				n int
			)
			if err := rows.Scan(&s, &n); err != nil {
				return err
			}
			counts[ordersync.Status(s)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}
