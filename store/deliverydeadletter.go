package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// AddDeliveryDeadLetter records a delivery an endpoint refused for good or
// that outlasted its retries. A letter for the same endpoint and
// webhook-id not yet replayed is updated, not duplicated; its id is
// returned.
func (db *DB) AddDeliveryDeadLetter(ctx context.Context, dl ordersync.DeliveryDeadLetter) (int64, error) {
	op := fmt.Sprintf("add delivery dead letter %s for endpoint %s", dl.WebhookID, dl.EndpointID)
	if err := ordersync.ValidateDeliveryDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	dl = dl.Bounded()
	body, created := letterDefaults(dl.Body, dl.CreatedAt)
	var id int64
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		return tx.QueryRowxContext(ctx, db.rebind(`
INSERT INTO delivery_dead_letters (endpoint_id, event, webhook_id, account, order_code, attempts, last_status, last_body, last_error, body, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (endpoint_id, webhook_id) WHERE replayed_at IS NULL DO UPDATE SET
    attempts = excluded.attempts,
    last_status = excluded.last_status,
    last_body = excluded.last_body,
    last_error = excluded.last_error,
    body = excluded.body
RETURNING id`), dl.EndpointID, string(dl.Event), dl.WebhookID, dl.Account, dl.OrderCode, dl.Attempts, dl.LastStatus,
			dl.LastBody, dl.LastError, body, dbTime(created)).Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

type deliveryDeadLetterRow struct {
	ID          int64      `db:"id"`
	EndpointID  string     `db:"endpoint_id"`
	Event       string     `db:"event"`
	WebhookID   string     `db:"webhook_id"`
	Account     string     `db:"account"`
	OrderCode   string     `db:"order_code"`
	Attempts    int        `db:"attempts"`
	LastStatus  int        `db:"last_status"`
	LastBody    string     `db:"last_body"`
	LastError   string     `db:"last_error"`
	Body        []byte     `db:"body"`
	CreatedAt   time.Time  `db:"created_at"`
	ReplayedAt  *time.Time `db:"replayed_at"`
	ReplayCount int        `db:"replay_count"`
}

const deliveryDeadLetterColumns = `id, endpoint_id, event, webhook_id, account, order_code, attempts, last_status, last_body, last_error, body, created_at, replayed_at, replay_count`

func (r *deliveryDeadLetterRow) letter() *ordersync.DeliveryDeadLetter {
	return &ordersync.DeliveryDeadLetter{
		ID: r.ID, EndpointID: r.EndpointID, Event: ordersync.HookEvent(r.Event), WebhookID: r.WebhookID,
		Account: r.Account, OrderCode: r.OrderCode, Attempts: r.Attempts, LastStatus: r.LastStatus,
		LastBody: r.LastBody, LastError: r.LastError, Body: r.Body, CreatedAt: r.CreatedAt.UTC(),
		ReplayedAt: utcPtr(r.ReplayedAt), ReplayCount: r.ReplayCount,
	}
}

// ListDeliveryDeadLetters returns delivery dead letters, newest first;
// replayed ones only with IncludeReplayed. Limit defaults to 100, at most
// 1000.
func (db *DB) ListDeliveryDeadLetters(ctx context.Context, f ordersync.DeliveryDeadLetterFilter) ([]*ordersync.DeliveryDeadLetter, error) {
	var c conditions
	c.equal("endpoint_id", f.EndpointID)
	if !f.IncludeReplayed {
		c.add("replayed_at IS NULL")
	}
	args := append(c.args, clampLimit(f.Limit, defaultListLimit, maxListLimit))
	query := `SELECT ` + deliveryDeadLetterColumns + ` FROM delivery_dead_letters WHERE ` +
		c.sql() + ` ORDER BY id DESC LIMIT ?`
	return selectList(ctx, db, "list delivery dead letters", query, args, (*deliveryDeadLetterRow).letter)
}

// FindDeliveryDeadLetter returns one delivery dead letter or ErrNotFound.
func (db *DB) FindDeliveryDeadLetter(ctx context.Context, id int64) (*ordersync.DeliveryDeadLetter, error) {
	var dl *ordersync.DeliveryDeadLetter
	err := db.inReadTx(ctx, fmt.Sprintf("find delivery dead letter %d", id), func(tx *sqlx.Tx) error {
		var r deliveryDeadLetterRow
		if err := tx.GetContext(ctx, &r, db.rebind(`SELECT `+deliveryDeadLetterColumns+` FROM delivery_dead_letters WHERE id = ?`), id); err != nil {
			return err
		}
		dl = r.letter()
		return nil
	})
	return dl, err
}

// PendingDeliveryDeadLetters counts, per endpoint, the delivery dead
// letters not yet replayed: the failed deliveries a person can still fix.
// Every page that says how many deliveries failed reads it here.
func (db *DB) PendingDeliveryDeadLetters(ctx context.Context) (map[string]int, error) {
	var out map[string]int
	err := db.inReadTx(ctx, "count pending delivery dead letters", func(tx *sqlx.Tx) (err error) {
		out, err = pendingDeliveryDeadLetters(ctx, tx)
		return err
	})
	return out, err
}

func pendingDeliveryDeadLetters(ctx context.Context, tx *sqlx.Tx) (map[string]int, error) {
	var rows []struct {
		EndpointID string `db:"endpoint_id"`
		N          int    `db:"n"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT endpoint_id, COUNT(*) AS n FROM delivery_dead_letters WHERE replayed_at IS NULL GROUP BY endpoint_id`); err != nil {
		return nil, fmt.Errorf("count delivery dead letters: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.EndpointID] = r.N
	}
	return out, nil
}

// MarkDeliveryDeadLetterReplayed records that a letter was delivered again.
func (db *DB) MarkDeliveryDeadLetterReplayed(ctx context.Context, id int64, at time.Time) error {
	return db.markReplayed(ctx, "delivery_dead_letters", fmt.Sprintf("mark delivery dead letter %d replayed", id), id, at)
}

var (
	_ ordersync.Endpoints           = (*DB)(nil)
	_ ordersync.DeliveryDeadLetters = (*DB)(nil)
)
