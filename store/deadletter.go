package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// maxDetail bounds the error text copied into the event log.
const maxDetail = 500

// AddDeadLetter records a permanent failure and logs its event with outcome
// dead_lettered, in one transaction. A letter for the same MsgID that was
// not replayed yet is updated (a redelivery failing again), not duplicated;
// its id is returned.
func (db *DB) AddDeadLetter(ctx context.Context, dl ordersync.DeadLetter) (int64, error) {
	op := fmt.Sprintf("add dead letter %s", dl.MsgID)
	if err := ordersync.ValidateDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	headers := dl.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	hdr, err := json.Marshal(headers)
	if err != nil {
		return 0, fmt.Errorf("%s: encode headers: %w", op, err)
	}
	body, created := letterDefaults(dl.Body, dl.CreatedAt)
	// The event log row takes whatever the body says about the event; a
	// malformed body leaves those columns empty. It is logged at the
	// event's receipt time when the letter has it, else at the creation
	// of the letter it updates, so a redelivery failing again finds the
	// same row.
	receivedAt, receiptErr := time.Parse(time.RFC3339Nano, dl.Headers["received_at"])
	ev := ordersync.EventRecord{
		MsgID: dl.MsgID, Account: dl.Account, ReceivedAt: receivedAt, OrderID: dl.OrderID,
		OrderReference: dl.OrderReference, OrderCode: dl.OrderCode, Outcome: ordersync.OutcomeDeadLettered,
		Detail: deadLetterDetail(dl),
	}
	if parsed, err := ordersync.ParseEvent(dl.Body); err == nil {
		ev.Type, ev.OrderType = parsed.Type, parsed.OrderType
		if ev.OrderID == "" {
			ev.OrderID = parsed.OrderID
		}
		if ev.OrderReference == "" {
			ev.OrderReference = parsed.OrderReference
		}
	}

	var id int64
	err = db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		err := tx.QueryRowxContext(ctx, db.rebind(`
INSERT INTO dead_letters (msg_id, account, reason, attempts, last_error, order_id, order_reference, order_code, body, headers, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (msg_id) WHERE replayed_at IS NULL DO UPDATE SET
    reason = excluded.reason,
    attempts = excluded.attempts,
    last_error = excluded.last_error,
    order_id = excluded.order_id,
    order_reference = excluded.order_reference,
    order_code = excluded.order_code,
    body = excluded.body,
    headers = excluded.headers
RETURNING id, created_at`),
			dl.MsgID, dl.Account, string(dl.Reason), dl.Attempts, dl.LastError, string(dl.OrderID), dl.OrderReference,
			dl.OrderCode, body, string(hdr), dbTime(created)).Scan(&id, &created)
		if err != nil {
			return fmt.Errorf("insert dead letter: %w", err)
		}
		if receiptErr != nil {
			ev.ReceivedAt = created
		}
		if err := db.execRows(ctx, tx, upsertEvents, [][]any{eventValues(ev, nil)}); err != nil {
			return fmt.Errorf("log event: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// letterDefaults is what a dead letter of either kind stores for a nil body
// (an empty one: the column is NOT NULL) and a zero creation time (now).
func letterDefaults(body []byte, created time.Time) ([]byte, time.Time) {
	if body == nil {
		body = []byte{}
	}
	if created.IsZero() {
		created = time.Now()
	}
	return body, created
}

func deadLetterDetail(dl ordersync.DeadLetter) string {
	d := string(dl.Reason)
	if dl.LastError != "" {
		d += ": " + dl.LastError
	}
	return ordersync.Clip(d, maxDetail)
}

type deadLetterRow struct {
	ID             int64      `db:"id"`
	MsgID          string     `db:"msg_id"`
	Account        string     `db:"account"`
	Reason         string     `db:"reason"`
	Attempts       int        `db:"attempts"`
	LastError      string     `db:"last_error"`
	OrderID        string     `db:"order_id"`
	OrderReference string     `db:"order_reference"`
	OrderCode      string     `db:"order_code"`
	Body           []byte     `db:"body"`
	Headers        string     `db:"headers"`
	CreatedAt      time.Time  `db:"created_at"`
	ReplayedAt     *time.Time `db:"replayed_at"`
	ReplayCount    int        `db:"replay_count"`
}

const deadLetterColumns = `id, msg_id, account, reason, attempts, last_error, order_id, order_reference, order_code, body, headers, created_at, replayed_at, replay_count`

func (r *deadLetterRow) deadLetter() (*ordersync.DeadLetter, error) {
	dl := &ordersync.DeadLetter{
		ID: r.ID, MsgID: r.MsgID, Account: r.Account, Reason: ordersync.DeadLetterReason(r.Reason),
		Attempts: r.Attempts, LastError: r.LastError, OrderID: ordersync.ID(r.OrderID),
		OrderReference: r.OrderReference, OrderCode: r.OrderCode, Body: r.Body,
		CreatedAt: r.CreatedAt.UTC(), ReplayedAt: utcPtr(r.ReplayedAt), ReplayCount: r.ReplayCount,
	}
	if err := json.Unmarshal([]byte(r.Headers), &dl.Headers); err != nil {
		return nil, fmt.Errorf("decode headers of dead letter %d: %w", r.ID, err)
	}
	return dl, nil
}

// ListDeadLetters returns dead letters, newest first. Replayed ones are
// left out unless IncludeReplayed; OrderID and OrderReference, when both
// given, select letters matching either. Limit defaults to 100 and is
// capped at 1000.
func (db *DB) ListDeadLetters(ctx context.Context, filter ordersync.DeadLetterFilter) ([]*ordersync.DeadLetter, error) {
	c := deadLetterWhere(filter)
	if filter.BeforeID > 0 {
		c.add("id < ?", filter.BeforeID)
	}
	args := append(c.args, clampLimit(filter.Limit, defaultListLimit, maxListLimit))
	query := `SELECT ` + deadLetterColumns + ` FROM dead_letters WHERE ` + c.sql() + ` ORDER BY id DESC LIMIT ?`

	var letters []*ordersync.DeadLetter
	err := db.inReadTx(ctx, "list dead letters", func(tx *sqlx.Tx) error {
		var rows []deadLetterRow
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), args...); err != nil {
			return err
		}
		letters = make([]*ordersync.DeadLetter, 0, len(rows))
		for i := range rows {
			dl, err := rows[i].deadLetter()
			if err != nil {
				return err
			}
			letters = append(letters, dl)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return letters, nil
}

// CountDeadLetters counts the letters the filter selects, per reason, in
// one read.
func (db *DB) CountDeadLetters(ctx context.Context, filter ordersync.DeadLetterFilter) (map[ordersync.DeadLetterReason]int, error) {
	c := deadLetterWhere(filter)
	query := `SELECT reason, COUNT(*) AS n FROM dead_letters WHERE ` + c.sql() + ` GROUP BY reason`
	out := map[ordersync.DeadLetterReason]int{}
	err := db.inReadTx(ctx, "count dead letters", func(tx *sqlx.Tx) error {
		var rows []struct {
			Reason string `db:"reason"`
			N      int    `db:"n"`
		}
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), c.args...); err != nil {
			return err
		}
		for _, r := range rows {
			out[ordersync.DeadLetterReason(r.Reason)] = r.N
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deadLetterWhere is the condition of a filter, but its page (BeforeID,
// Limit).
func deadLetterWhere(filter ordersync.DeadLetterFilter) conditions {
	var c conditions
	c.equal("account", filter.Account)
	c.equal("reason", string(filter.Reason))
	if !filter.IncludeReplayed {
		c.add("replayed_at IS NULL")
	}
	switch {
	case filter.OrderID != "" && filter.OrderReference != "":
		c.add("(order_id = ? OR order_reference = ?)", string(filter.OrderID), filter.OrderReference)
	case filter.OrderID != "":
		c.add("order_id = ?", string(filter.OrderID))
	case filter.OrderReference != "":
		c.add("order_reference = ?", filter.OrderReference)
	}
	if !filter.RequeuedFrom.IsZero() {
		// A replay queues the event as replay:<letter>:<count>, the count
		// its letter has once marked replayed; a letter of that message id
		// is the replay that failed again.
		to := filter.RequeuedTo
		if to.IsZero() {
			to = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		c.add(`msg_id IN (SELECT 'replay:' || CAST(r.id AS TEXT) || ':' || CAST(r.replay_count AS TEXT) FROM dead_letters r
WHERE r.replayed_at >= ? AND r.replayed_at < ?)`, dbTime(filter.RequeuedFrom), dbTime(to))
	}
	return c
}

// FindDeadLetter returns one dead letter, replayed or not.
func (db *DB) FindDeadLetter(ctx context.Context, id int64) (*ordersync.DeadLetter, error) {
	var dl *ordersync.DeadLetter
	err := db.inReadTx(ctx, fmt.Sprintf("find dead letter %d", id), func(tx *sqlx.Tx) error {
		var r deadLetterRow
		if err := tx.GetContext(ctx, &r, db.rebind(`SELECT `+deadLetterColumns+` FROM dead_letters WHERE id = ?`), id); err != nil {
			return err
		}
		var err error
		dl, err = r.deadLetter()
		return err
	})
	if err != nil {
		return nil, err
	}
	return dl, nil
}

// MarkDeadLetterReplayed records that a dead letter was queued again.
func (db *DB) MarkDeadLetterReplayed(ctx context.Context, id int64, at time.Time) error {
	return db.markReplayed(ctx, "dead_letters", fmt.Sprintf("mark dead letter %d replayed", id), id, at)
}

// markReplayed stamps a letter of table (dead_letters or
// delivery_dead_letters) replayed at at and counts the replay; a letter
// not there is ErrNotFound.
func (db *DB) markReplayed(ctx context.Context, table, op string, id int64, at time.Time) error {
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.rebind(`UPDATE `+table+` SET replayed_at = ?, replay_count = replay_count + 1 WHERE id = ?`), dbTime(at), id)
		return oneRow(res, err)
	})
}
