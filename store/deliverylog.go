package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// upsertDeliveries writes delivery log rows; a webhook-id already there is
// a delivery that ended again, and takes the new end. A row that does not
// know the order's status (a dead letter replayed) keeps the one recorded.
var upsertDeliveries = rowsSQL{
	prefix: `INSERT INTO delivery_log (webhook_id, endpoint_id, event, account, order_code, order_status, outcome, attempts, status, detail, ended_at) VALUES `,
	cols:   11,
	suffix: ` ON CONFLICT (webhook_id) DO UPDATE SET
    order_status = CASE WHEN excluded.order_status <> '' THEN excluded.order_status ELSE delivery_log.order_status END,
    outcome = excluded.outcome,
    attempts = excluded.attempts,
    status = excluded.status,
    detail = excluded.detail,
    ended_at = excluded.ended_at`,
}

// insertDeliveryFailures keeps each failed end of a delivery.
var insertDeliveryFailures = rowsSQL{
	prefix: `INSERT INTO delivery_failures (webhook_id, endpoint_id, event, account, order_code, outcome, attempts, status, detail, ended_at) VALUES `,
	cols:   10,
}

// RecordDeliveries writes delivery log rows, each replacing the row of its
// webhook-id, and keeps each failed end beside, in one transaction.
func (db *DB) RecordDeliveries(ctx context.Context, recs []ordersync.DeliveryRecord) error {
	if len(recs) == 0 {
		return nil
	}
	op := fmt.Sprintf("record %d deliveries", len(recs))
	now := time.Now()
	// One statement must not touch a row twice: the last end of a
	// webhook-id wins.
	at := make(map[string]int, len(recs))
	rows := make([][]any, 0, len(recs))
	var failures [][]any
	for _, r := range recs {
		switch {
		case r.WebhookID == "" || r.EndpointID == "":
			return fmt.Errorf("%s: delivery %q: WebhookID and EndpointID are required", op, r.WebhookID)
		case r.Event == "" || r.Outcome == "":
			return fmt.Errorf("%s: delivery %s: Event and Outcome are required", op, r.WebhookID)
		}
		if r.At.IsZero() {
			r.At = now
		}
		row := []any{r.WebhookID, r.EndpointID, string(r.Event), r.Account, r.OrderCode, string(r.OrderStatus),
			string(r.Outcome), r.Attempts, r.Status, ordersync.Clip(r.Detail, maxDetail), dbTime(r.At)}
		if r.Outcome != ordersync.DeliveryDelivered {
			failures = append(failures, []any{r.WebhookID, r.EndpointID, string(r.Event), r.Account, r.OrderCode,
				string(r.Outcome), r.Attempts, r.Status, ordersync.Clip(r.Detail, maxDetail), dbTime(r.At)})
		}
		if i, ok := at[r.WebhookID]; ok {
			rows[i] = row
			continue
		}
		at[r.WebhookID] = len(rows)
		rows = append(rows, row)
	}
	if err := db.prepareWrites(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		if err := db.execRows(ctx, tx, upsertDeliveries, rows); err != nil {
			return err
		}
		if len(failures) > 0 {
			if err := db.execRows(ctx, tx, insertDeliveryFailures, failures); err != nil {
				return err
			}
		}
		return db.settleDeliveryDeadLetters(ctx, tx, recs, now)
	})
}

// settleDeliveryDeadLetters marks replayed the pending delivery dead
// letters of the deliveries that ended delivered (a replay of the events
// since a time, or a redelivery, took them through): a failed delivery
// stays failed until its event reached the endpoint, however it got there,
// so the list of failed deliveries and every count of them agree.
func (db *DB) settleDeliveryDeadLetters(ctx context.Context, tx *sqlx.Tx, recs []ordersync.DeliveryRecord, at time.Time) error {
	byEndpoint := map[string][]any{}
	for _, r := range recs {
		if r.Outcome == ordersync.DeliveryDelivered {
			byEndpoint[r.EndpointID] = append(byEndpoint[r.EndpointID], r.WebhookID)
		}
	}
	for ep, ids := range byEndpoint {
		args := append([]any{dbTime(at), ep}, ids...)
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE delivery_dead_letters SET replayed_at = ?, replay_count = replay_count + 1
WHERE endpoint_id = ? AND replayed_at IS NULL AND webhook_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), args...)
		if err != nil {
			return fmt.Errorf("settle the dead letters of endpoint %s: %w", ep, err)
		}
	}
	return nil
}

type deliveryRow struct {
	WebhookID   string    `db:"webhook_id"`
	EndpointID  string    `db:"endpoint_id"`
	Event       string    `db:"event"`
	Account     string    `db:"account"`
	OrderCode   string    `db:"order_code"`
	OrderStatus string    `db:"order_status"`
	Outcome     string    `db:"outcome"`
	Attempts    int       `db:"attempts"`
	Status      int       `db:"status"`
	Detail      string    `db:"detail"`
	EndedAt     time.Time `db:"ended_at"`
}

// ListDeliveries returns delivery log rows, newest first. Limit defaults to
// 100 and is capped at 1000.
func (db *DB) ListDeliveries(ctx context.Context, filter ordersync.DeliveryFilter) ([]ordersync.DeliveryRecord, error) {
	var c conditions
	c.equal("account", filter.Account)
	c.equal("order_code", filter.OrderCode)
	args := append(c.args, clampLimit(filter.Limit, defaultListLimit, maxListLimit))
	query := `SELECT webhook_id, endpoint_id, event, account, order_code, order_status, outcome, attempts, status, detail, ended_at
FROM delivery_log WHERE ` + c.sql() + ` ORDER BY ended_at DESC, webhook_id DESC LIMIT ?`
	latest, err := selectList(ctx, db, "list deliveries", query, args, (*deliveryRow).record)
	if err != nil || !filter.Failures {
		return latest, err
	}
	query = `SELECT webhook_id, endpoint_id, event, account, order_code, '' AS order_status, outcome, attempts, status, detail, ended_at
FROM delivery_failures WHERE ` + c.sql() + ` ORDER BY ended_at DESC, id DESC LIMIT ?`
	failures, err := selectList(ctx, db, "list delivery failures", query, args, (*deliveryRow).record)
	if err != nil {
		return nil, err
	}
	return mergeDeliveryEnds(latest, failures, clampLimit(filter.Limit, defaultListLimit, maxListLimit)), nil
}

// mergeDeliveryEnds is the latest ends and the earlier failed ones, newest
// first, at most limit: a failure that is a delivery's latest end is in
// latest already and taken once.
func mergeDeliveryEnds(latest, failures []ordersync.DeliveryRecord, limit int) []ordersync.DeliveryRecord {
	type end struct {
		id string
		at time.Time
	}
	seen := make(map[end]bool, len(latest))
	for _, r := range latest {
		seen[end{r.WebhookID, r.At}] = true
	}
	out := latest
	for _, r := range failures {
		if !seen[end{r.WebhookID, r.At}] {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b ordersync.DeliveryRecord) int { return b.At.Compare(a.At) })
	return out[:min(len(out), limit)]
}

// DeliveryHealth counts, per endpoint, the deliveries that ended at or
// after since, and finds each one's latest failure, in one read.
func (db *DB) DeliveryHealth(ctx context.Context, since time.Time) (map[string]ordersync.DeliveryHealth, error) {
	var out map[string]ordersync.DeliveryHealth
	err := db.inReadTx(ctx, "read endpoint health", func(tx *sqlx.Tx) (err error) {
		out, err = db.deliveryHealth(ctx, tx, since)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deliveryHealth is DeliveryHealth inside tx, for the overview's snapshot
// too. Both reads walk the log's index on ended_at, so the period bounds
// the work.
func (db *DB) deliveryHealth(ctx context.Context, tx *sqlx.Tx, since time.Time) (map[string]ordersync.DeliveryHealth, error) {
	var counts []struct {
		EndpointID string `db:"endpoint_id"`
		Delivered  int    `db:"delivered"`
		N          int    `db:"n"`
	}
	if err := tx.SelectContext(ctx, &counts, db.rebind(`SELECT endpoint_id,
    SUM(CASE WHEN outcome = ? THEN 1 ELSE 0 END) AS delivered, COUNT(*) AS n
FROM delivery_log WHERE ended_at >= ? GROUP BY endpoint_id`), string(ordersync.DeliveryDelivered), dbTime(since)); err != nil {
		return nil, fmt.Errorf("count deliveries: %w", err)
	}
	out := make(map[string]ordersync.DeliveryHealth, len(counts))
	for _, c := range counts {
		h := ordersync.DeliveryHealth{Delivered: c.Delivered, Failed: c.N - c.Delivered}
		if h.Failed > 0 {
			var r deliveryRow
			err := tx.GetContext(ctx, &r, db.rebind(`SELECT webhook_id, endpoint_id, event, account, order_code, order_status, outcome, attempts, status, detail, ended_at
FROM delivery_log WHERE endpoint_id = ? AND outcome <> ? AND ended_at >= ? ORDER BY ended_at DESC, webhook_id DESC LIMIT 1`),
				c.EndpointID, string(ordersync.DeliveryDelivered), dbTime(since))
			if err != nil {
				return nil, fmt.Errorf("read the latest failed delivery: %w", err)
			}
			rec := r.record()
			h.LastFailure = &rec
		}
		out[c.EndpointID] = h
	}
	return out, nil
}

func (r deliveryRow) record() ordersync.DeliveryRecord {
	return ordersync.DeliveryRecord{
		WebhookID: r.WebhookID, EndpointID: r.EndpointID, Event: ordersync.HookEvent(r.Event), Account: r.Account,
		OrderCode: r.OrderCode, OrderStatus: ordersync.Status(r.OrderStatus), Outcome: ordersync.DeliveryOutcome(r.Outcome),
		Attempts: r.Attempts, Status: r.Status, Detail: r.Detail, At: r.EndedAt.UTC(),
	}
}

var _ ordersync.DeliveryLog = (*DB)(nil)
