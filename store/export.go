package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// defaultExportBatch is how many orders one read of an export takes.
const defaultExportBatch = 1000

// exportWhere is the condition an export's filter puts on orders: the
// listing's filters.
func exportWhere(filter ordersync.OrderFilter) ([]string, []any) {
	where := []string{"raw_document IS NOT NULL"}
	var args []any
	if filter.Account != "" {
		where, args = append(where, "account = ?"), append(args, filter.Account)
	}
	if len(filter.Statuses) > 0 {
		where = append(where, "status IN ("+placeholders(len(filter.Statuses))+")")
		for _, st := range filter.Statuses {
			args = append(args, string(st))
		}
	}
	if !filter.Since.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, dbTime(filter.Since))
	}
	return where, args
}

// ExportOrders calls fn with the orders params select, newest first, in
// batches read each in its own read transaction. Pages are keyset pages on
// (created_at DESC, id ASC), the order of the creation-time indexes (whose
// entries end in the row id), so each read starts where the last ended
// instead of counting past what it already gave; orders without a creation
// time follow, by id. A batch sees the mirror as it was when it was read:
// an order that changes during an export is written as one batch saw it,
// and an order created during it may or may not appear.
func (db *DB) ExportOrders(ctx context.Context, params ordersync.ExportParams, fn func(batch []ordersync.ExportedOrder) error) error {
	size := params.BatchSize
	if size <= 0 {
		size = defaultExportBatch
	}
	where, args := exportWhere(params.Filter)
	base := `SELECT ` + orderRowColumns + ` FROM orders WHERE ` + strings.Join(where, " AND ")
	dated := db.rebind(base + ` AND created_at IS NOT NULL AND created_at <= ? AND (created_at < ? OR id > ?)
ORDER BY created_at DESC, id LIMIT ?`)
	datedFirst := db.rebind(base + ` AND created_at IS NOT NULL ORDER BY created_at DESC, id LIMIT ?`)
	undated := db.rebind(base + ` AND created_at IS NULL AND id > ? ORDER BY id LIMIT ?`)

	var (
		lastAt    time.Time
		lastID    int64
		started   bool
		undatedOn = params.Filter.Since.IsZero() // a creation bound excludes orders without a creation time
		inUndated bool
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			query string
			qargs = args[:len(args):len(args)]
		)
		switch {
		case inUndated:
			query, qargs = undated, append(qargs, lastID, size)
		case started:
			at := dbTime(lastAt)
			query, qargs = dated, append(qargs, at, at, lastID, size)
		default:
			query, qargs = datedFirst, append(qargs, size)
		}
		batch, rows, err := db.exportBatch(ctx, query, qargs, params)
		if err != nil {
			return err
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
			last := rows[len(rows)-1]
			lastID, started = last.ID, true
			if last.CreatedAt != nil {
				lastAt = *last.CreatedAt
			}
		}
		if len(batch) == size {
			continue
		}
		if inUndated || !undatedOn {
			return nil
		}
		inUndated, lastID = true, 0
	}
}

// exportBatch reads one batch of an export in one read transaction.
func (db *DB) exportBatch(ctx context.Context, query string, args []any, params ordersync.ExportParams) ([]ordersync.ExportedOrder, []orderRow, error) {
	var (
		rows  []orderRow
		batch []ordersync.ExportedOrder
	)
	err := db.inReadTx(ctx, "export orders", func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &rows, query, args...); err != nil {
			return err
		}
		batch = make([]ordersync.ExportedOrder, len(rows))
		ids := make([]int64, len(rows))
		orders := make([]*ordersync.MirroredOrder, len(rows))
		for i := range rows {
			orders[i], ids[i] = rows[i].mirrored(), rows[i].ID
			batch[i].MirroredOrder = orders[i]
		}
		if params.LineItems {
			if err := db.loadDetails(ctx, tx, ids, orders); err != nil {
				return err
			}
		}
		if params.StatusChanges {
			return db.loadStatusChanges(ctx, tx, ids, batch)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return batch, rows, nil
}

type statusChangeRow struct {
	OrderRow int64     `db:"order_row"`
	From     string    `db:"from_status"`
	To       string    `db:"to_status"`
	At       time.Time `db:"at"`
	Cause    string    `db:"cause"`
}

// loadStatusChanges fills the status changes of batch, whose rows are rows
// (one to one), oldest first, with one query per maxInParams orders.
func (db *DB) loadStatusChanges(ctx context.Context, tx *sqlx.Tx, rows []int64, batch []ordersync.ExportedOrder) error {
	byRow := make(map[int64]*ordersync.ExportedOrder, len(batch))
	for i := range batch {
		byRow[rows[i]] = &batch[i]
	}
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), maxInParams)]
		rows = rows[len(chunk):]
		args := make([]any, len(chunk))
		for i, r := range chunk {
			args[i] = r
		}
		var changes []statusChangeRow
		if err := tx.SelectContext(ctx, &changes, db.rebind(`SELECT order_row, from_status, to_status, at, cause FROM status_history
WHERE order_row IN (`+placeholders(len(chunk))+`) ORDER BY order_row, id`), args...); err != nil {
			return fmt.Errorf("load status history: %w", err)
		}
		for _, c := range changes {
			o := byRow[c.OrderRow]
			o.StatusChanges = append(o.StatusChanges, ordersync.StatusChange{
				StatusTransition: ordersync.StatusTransition{From: ordersync.Status(c.From), To: ordersync.Status(c.To)},
				At:               c.At.UTC(), Cause: ordersync.Cause(c.Cause),
			})
		}
	}
	return nil
}

// StoreTimeZone returns the time zone the account's most recently recorded
// order names for its store, or "" before any order named one. Like
// StoreCurrency, it reads one row from the newest end of the table.
func (db *DB) StoreTimeZone(ctx context.Context, account string) (string, error) {
	var zone string
	err := db.inReadTx(ctx, "read the store's time zone", func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &zone, db.rebind(`SELECT store_timezone FROM orders
WHERE account = ? AND store_timezone <> '' ORDER BY id DESC LIMIT 1`), account)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return zone, err
}

var _ ordersync.OrderExporter = (*DB)(nil)
