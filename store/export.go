package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// defaultExportBatch is how many orders one read of an export takes.
const defaultExportBatch = 1000

// ExportOrders calls fn with the orders params select, in the filter's
// sort, in batches read each in its own read transaction. A batch is a
// listing's page: the same query as ListOrders (selectOrders), continued
// after the last order of the batch before by the same keyset, so an export
// holds exactly the orders every page of the listing would, and each read
// starts where the last ended instead of counting past what it already
// gave. The filter's After, Limit and Offset do not apply: an export is the
// whole view. A batch sees the mirror as it was when it was read: an order
// that changes during an export is written as one batch saw it, and an
// order created during it may or may not appear.
func (db *DB) ExportOrders(ctx context.Context, params ordersync.ExportParams, fn func(batch []ordersync.ExportedOrder) error) error {
	size := params.BatchSize
	if size <= 0 {
		size = defaultExportBatch
	}
	filter := params.Filter
	filter.After, filter.Limit, filter.Offset, filter.Count = nil, 0, 0, false
	sort, err := checkFilter(filter)
	if err != nil {
		return fmt.Errorf("export orders: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, rows, err := db.exportBatch(ctx, filter, sort, size, params)
		if err != nil {
			return err
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
		if len(batch) < size {
			return nil
		}
		filter.After = rows[len(rows)-1].cursor(sort)
	}
}

// exportBatch reads one batch of an export in one read transaction.
func (db *DB) exportBatch(ctx context.Context, filter ordersync.OrderFilter, sort ordersync.OrderSort, size int,
	params ordersync.ExportParams) ([]ordersync.ExportedOrder, []orderRow, error) {
	var (
		rows  []orderRow
		batch []ordersync.ExportedOrder
	)
	err := db.inReadTx(ctx, "export orders", func(tx *sqlx.Tx) error {
		names, err := db.planSearch(ctx, tx, filter)
		if err != nil {
			return err
		}
		if rows, err = db.selectOrders(ctx, tx, exportColumns(params.Fields, sort), filter, names, sort, size, 0); err != nil {
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
			if err := db.loadLineItems(ctx, tx, ids, orders); err != nil {
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
// (one to one), oldest first, with one query.
func (db *DB) loadStatusChanges(ctx context.Context, tx *sqlx.Tx, rows []int64, batch []ordersync.ExportedOrder) error {
	if len(rows) == 0 {
		return nil
	}
	byRow := make(map[int64]*ordersync.ExportedOrder, len(batch))
	for i := range batch {
		byRow[rows[i]] = &batch[i]
	}
	in, arg := db.rowSet(rows)
	var changes []statusChangeRow
	if err := tx.SelectContext(ctx, &changes, db.rebind(`SELECT order_row, from_status, to_status, at, cause FROM status_history
WHERE `+in+` ORDER BY order_row, id`), arg); err != nil {
		return fmt.Errorf("load status history: %w", err)
	}
	for _, c := range changes {
		o := byRow[c.OrderRow]
		o.StatusChanges = append(o.StatusChanges, ordersync.StatusChange{
			StatusTransition: ordersync.StatusTransition{From: ordersync.Status(c.From), To: ordersync.Status(c.To)},
			At:               c.At.UTC(), Cause: ordersync.Cause(c.Cause),
		})
	}
	return nil
}

// StoreTimeZone returns the time zone the account's most recently recorded
// order names for its store, or "" before any order named one. Like
// StoreCurrency, it reads one row from the newest end of the table.
func (db *DB) StoreTimeZone(ctx context.Context, account string) (string, error) {
	return db.newestStoreField(ctx, "read the store's time zone", "store_timezone", account)
}

var _ ordersync.OrderExporter = (*DB)(nil)
