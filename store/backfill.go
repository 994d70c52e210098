package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// backfillBatch is how many orders one transaction of a backfill fills.
const backfillBatch = 1000

// backfill fills columns a migration added for the orders mirrored before
// it, when the migration's mark table says the fill is pending: fill takes
// the fetched orders after the row id after, at most limit of them in id
// order, within tx, and says the last id it took and how many. Each batch
// is its own transaction and writes what it would write again, so a restart
// midway starts over safely; the mark is
// cleared at the end. It runs under the migration lock.
func (db *DB) backfill(ctx context.Context, what, mark string, fill func(tx *sqlx.Tx, after int64, limit int) (last int64, n int, err error)) error {
	var pending int
	if err := db.write.GetContext(ctx, &pending, `SELECT COUNT(*) FROM `+mark); err != nil {
		return fmt.Errorf("read the %s backfill mark: %w", what, err)
	}
	if pending == 0 {
		return nil
	}
	var after int64
	filled := 0
	for {
		var n int
		err := db.inTx(ctx, "fill "+what, func(tx *sqlx.Tx) error {
			var err error
			after, n, err = fill(tx, after, backfillBatch)
			return err
		})
		if err != nil {
			return err
		}
		filled += n
		if n < backfillBatch {
			break
		}
	}
	if _, err := db.write.ExecContext(ctx, `DELETE FROM `+mark); err != nil {
		return fmt.Errorf("clear the %s backfill mark: %w", what, err)
	}
	if filled > 0 {
		db.logger.InfoContext(ctx, "filled the "+what+" of mirrored orders", "orders", filled)
	}
	return nil
}
