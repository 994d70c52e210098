package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

type eventRow struct {
	MsgID          string    `db:"msg_id"`
	Account        string    `db:"account"`
	ReceivedAt     time.Time `db:"received_at"`
	Type           string    `db:"type"`
	OrderType      string    `db:"order_type"`
	OrderID        string    `db:"order_id"`
	OrderReference string    `db:"order_reference"`
	OrderCode      string    `db:"order_code"`
	Signature      string    `db:"signature"`
	Outcome        string    `db:"outcome"`
	Detail         string    `db:"detail"`
}

// ListEvents returns event log rows, newest first. Limit defaults to 100
// and is capped at 1000.
func (db *DB) ListEvents(ctx context.Context, filter ordersync.EventFilter) ([]ordersync.EventRecord, error) {
	var c conditions
	if filter.OrderCode != "" {
		// An order's events are those logged under its row and those of its
		// code logged without one (migration 20). The account narrows both
		// halves and not the whole query, which would have the planner walk
		// the account's whole log.
		var key conditions
		key.equal("account", filter.Account)
		key.equal("order_code", filter.OrderCode)
		where := strings.Join(key.where, " AND ")
		c.add("id IN (SELECT id FROM event_log WHERE "+where+" AND order_code <> '' AND order_row IS NULL"+
			" UNION ALL SELECT id FROM event_log WHERE order_row IN (SELECT id FROM orders WHERE "+where+"))",
			slices.Concat(key.args, key.args)...)
	} else {
		c.equal("account", filter.Account)
	}
	if filter.OrderID != "" {
		c.add("order_id = ? AND order_id <> ''", string(filter.OrderID))
	}
	c.equal("msg_id", filter.MsgID)
	args := append(c.args, clampLimit(filter.Limit, defaultListLimit, maxListLimit))
	query := `SELECT msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail
FROM event_log WHERE ` + c.sql() + ` ORDER BY received_at DESC, msg_id DESC LIMIT ?`
	return selectList(ctx, db, "list events", query, args, (*eventRow).record)
}

// LoggedMsgIDs returns which of ids the event log holds, reading the log
// once: the log has no index by message id (its key is the receipt, so
// inserts append), so a lookup per id would read it once per id.
func (db *DB) LoggedMsgIDs(ctx context.Context, ids []string) (map[string]bool, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = false
	}
	err := db.inReadTx(ctx, "logged message ids", func(tx *sqlx.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT msg_id FROM event_log`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var id string
		for rows.Next() {
			if err := rows.Scan(&id); err != nil {
				return err
			}
			if _, ok := want[id]; ok {
				want[id] = true
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return want, nil
}

func (r *eventRow) record() ordersync.EventRecord {
	return ordersync.EventRecord{
		MsgID: r.MsgID, Account: r.Account, ReceivedAt: r.ReceivedAt.UTC(), Type: ordersync.EventType(r.Type),
		OrderType: r.OrderType, OrderID: ordersync.ID(r.OrderID), OrderReference: r.OrderReference,
		OrderCode: r.OrderCode, Signature: ordersync.SignatureVerdict(r.Signature),
		Outcome: ordersync.EventOutcome(r.Outcome), Detail: r.Detail,
	}
}
