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

// maxInParams bounds the arguments of one IN list, well under SQLite's and
// PostgreSQL's limits.
const maxInParams = 500

// AllocateFetchSeq reserves n consecutive fetch sequence numbers and returns
// the first. The single row's lock serialises every process.
func (db *DB) AllocateFetchSeq(ctx context.Context, n int) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("allocate %d fetch sequence numbers: n must be at least 1", n)
	}
	op := fmt.Sprintf("allocate %d fetch sequence numbers", n)
	const query = `UPDATE fetch_sequence SET value = value + ? WHERE id = 1 RETURNING value`
	var stmt *sqlx.Stmt
	if db.writeStmts != nil {
		var err error
		if stmt, err = db.writeStmts.get(ctx, query); err != nil {
			return 0, fmt.Errorf("%s: %w", op, err)
		}
	}
	var last int64
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		if stmt != nil {
			return tx.StmtxContext(ctx, stmt).QueryRowxContext(ctx, n).Scan(&last)
		}
		return tx.QueryRowxContext(ctx, db.rebind(query), n).Scan(&last)
	})
	if err != nil {
		return 0, err
	}
	return last - int64(n) + 1, nil
}

// RecordOrderRef inserts a placeholder for an order not fetched yet, or fills
// the keys an existing row lacks. Fetched data is never overwritten.
func (db *DB) RecordOrderRef(ctx context.Context, ref ordersync.OrderRef) error {
	op := fmt.Sprintf("record order ref %s/%s", ref.Account, ref.Code)
	if ref.Account == "" || ref.Code == "" {
		return fmt.Errorf("%s: account and code are required", op)
	}
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		// A placeholder is due by the schedule of an order just created;
		// one already fetched keeps its own.
		now := time.Now()
		due, _ := ordersync.NextCheck(ordersync.CheckState{ActiveAt: now, ExpiresAt: ref.ExpiresAt}, now)
		_, err := tx.ExecContext(ctx, db.rebind(`
INSERT INTO orders (account, order_code, order_id, order_reference, expires_at, first_seen_at, next_check_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (account, order_code) DO UPDATE SET
    order_id = CASE WHEN orders.order_id = '' THEN excluded.order_id ELSE orders.order_id END,
    order_reference = CASE WHEN orders.order_reference = '' THEN excluded.order_reference ELSE orders.order_reference END,
    expires_at = COALESCE(orders.expires_at, excluded.expires_at),
    next_check_at = CASE WHEN orders.status = '' THEN COALESCE(orders.next_check_at, excluded.next_check_at) ELSE orders.next_check_at END`),
			ref.Account, ref.Code, string(ref.ID), ref.Reference, nullTime(ref.ExpiresAt), dbTime(now), dbTime(due))
		return err
	})
}

// ResolveOrderCode maps an order's id, then its reference (the most recent
// order carrying it), to its code within the account. A ref that already has
// a code resolves to it.
func (db *DB) ResolveOrderCode(ctx context.Context, ref ordersync.OrderRef) (string, error) {
	if ref.Code != "" {
		return ref.Code, nil
	}
	op := fmt.Sprintf("resolve order code of id %q reference %q in %s", ref.ID, ref.Reference, ref.Account)
	if ref.ID == "" && ref.Reference == "" {
		return "", fmt.Errorf("%s: %w", op, ordersync.ErrNotFound)
	}
	code, err := db.queryCode(ctx, resolveByIDSQL, ref.Account, string(ref.ID))
	if errors.Is(err, sql.ErrNoRows) && ref.Reference != "" {
		// A reference is the merchant's and may repeat; an event that
		// carries an orderId must not be taken for another order that
		// shares its reference, so only an order whose id is the event's,
		// or not known yet, matches.
		code, err = db.queryCode(ctx, resolveByReferenceSQL, ref.Account, ref.Reference, string(ref.ID), string(ref.ID))
	}
	return code, translate(op, err)
}

// The lookups of ResolveOrderCode, each one statement (one snapshot) and,
// on SQLite, prepared once: they run for every webhook without an order
// code. "<> ”" repeats the partial indexes' condition: without it SQLite
// cannot use them for a bound parameter and scans the whole table.
const (
	resolveByIDSQL = `SELECT order_code FROM orders WHERE account = ? AND order_id = ? AND order_id <> ''
ORDER BY COALESCE(created_at, first_seen_at) DESC LIMIT 1`
	resolveByReferenceSQL = `SELECT order_code FROM orders WHERE account = ? AND order_reference = ? AND order_reference <> ''
AND (? = '' OR order_id = '' OR order_id = ?)
ORDER BY COALESCE(created_at, first_seen_at) DESC LIMIT 1`
)

// queryCode runs a lookup that selects one order_code.
func (db *DB) queryCode(ctx context.Context, query string, args ...any) (string, error) {
	var code string
	if db.readStmts == nil {
		return code, db.read.QueryRowxContext(ctx, db.rebind(query), args...).Scan(&code)
	}
	stmt, err := db.readStmts.get(ctx, query)
	if err != nil {
		return "", err
	}
	return code, stmt.QueryRowxContext(ctx, args...).Scan(&code)
}

// RecordEvents adds event log rows; an event already logged (the same
// account, MsgID and receipt time: a redelivery keeps its receipt time)
// takes the new outcome and detail, and any keys it lacked. Within one call
// the last record of a MsgID wins.
func (db *DB) RecordEvents(ctx context.Context, events []ordersync.EventRecord) error {
	if len(events) == 0 {
		return nil
	}
	op := fmt.Sprintf("record %d events", len(events))
	now := time.Now()
	b := batch{eventAt: map[string]int{}}
	for _, ev := range events {
		if ev.MsgID == "" || ev.Account == "" {
			return fmt.Errorf("%s: event %q: MsgID and Account are required", op, ev.MsgID)
		}
		if ev.ReceivedAt.IsZero() {
			ev.ReceivedAt = now
		}
		b.addEvent(ev, orderKey{})
	}
	rows := make([][]any, len(b.events))
	for i, ev := range b.events {
		rows[i] = eventValues(ev, nil)
	}
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		return db.execRows(ctx, tx, upsertEvents, rows)
	})
}

// CurrentFetchSeq returns the highest fetch sequence number handed out so
// far, by any process. It reads without writing: on SQLite it does not
// wait for the write connection.
func (db *DB) CurrentFetchSeq(ctx context.Context) (int64, error) {
	const query = `SELECT value FROM fetch_sequence WHERE id = 1`
	var (
		cur int64
		err error
	)
	if db.readStmts != nil {
		var stmt *sqlx.Stmt
		if stmt, err = db.readStmts.get(ctx, query); err == nil {
			err = stmt.QueryRowxContext(ctx).Scan(&cur)
		}
	} else {
		err = db.read.QueryRowxContext(ctx, query).Scan(&cur)
	}
	return cur, translate("read the fetch sequence", err)
}

// ResolveOrderCodes maps order ids to codes within one account, as
// ResolveOrderCode does by id (the most recently created order carrying an
// id wins), for many ids in one statement per 512. Ids it does not know are
// missing from the map. It serves the worker's batches of webhooks, which
// carry an id and no code: one read for a batch instead of one per event.
func (db *DB) ResolveOrderCodes(ctx context.Context, account string, ids []ordersync.ID) (map[ordersync.ID]string, error) {
	op := fmt.Sprintf("resolve the order codes of %d ids in %s", len(ids), account)
	codes := make(map[ordersync.ID]string, len(ids))
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), resolveBatchMax)]
		rest = rest[len(chunk):]
		args, size := paddedArgs(account, chunk)
		// Newest first: the first row of an id is the one to keep.
		query := `SELECT order_id, order_code FROM orders
WHERE account = ? AND order_id IN (` + placeholders(size) + `) AND order_id <> ''
ORDER BY COALESCE(created_at, first_seen_at) DESC`
		var rows []struct {
			ID   string `db:"order_id"`
			Code string `db:"order_code"`
		}
		if err := db.selectRead(ctx, &rows, query, args...); err != nil {
			return nil, translate(op, err)
		}
		for _, r := range rows {
			if _, seen := codes[ordersync.ID(r.ID)]; !seen {
				codes[ordersync.ID(r.ID)] = r.Code
			}
		}
	}
	return codes, nil
}

// resolveBatchMax bounds the ids of one ResolveOrderCodes statement.
const resolveBatchMax = 512

// paddedArgs is account followed by keys, padded to a power of two by
// repeating the last key, so that a few prepared statements serve every
// batch; n is the keys' count after padding.
func paddedArgs[K ~string](account string, keys []K) (args []any, n int) {
	n = 1
	for n < len(keys) {
		n *= 2
	}
	args = make([]any, 0, n+1)
	args = append(args, account)
	for i := range n {
		args = append(args, string(keys[min(i, len(keys)-1)]))
	}
	return args, n
}

// selectRead runs a read outside a transaction, prepared once on SQLite.
func (db *DB) selectRead(ctx context.Context, dest any, query string, args ...any) error {
	if db.readStmts == nil {
		return db.read.SelectContext(ctx, dest, db.rebind(query), args...)
	}
	stmt, err := db.readStmts.get(ctx, query)
	if err != nil {
		return err
	}
	return stmt.SelectContext(ctx, dest, args...)
}
