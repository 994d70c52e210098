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

// The queries of Overview. Each reads an index: the event log's by
// account and receipt, the orders' by account and creation (a
// never-fetched order has none) and by account and code, the outbox's and
// the dead letters' of those pending, the delivery log's by end, the
// pending delivery dead letters'. Endpoints are few.
const (
	overviewWebhooksSQL = `SELECT COUNT(*) AS webhooks, COALESCE(SUM(CASE WHEN outcome IN ('synced', 'already_fetched') THEN 1 ELSE 0 END), 0) AS mirrored
FROM event_log WHERE account = ? AND received_at >= ? AND received_at <= ?`
	// The newest mirrored webhooks first, then their orders: a join first
	// would look up the order of every webhook of the window when few are
	// still their order's latest.
	overviewLagSQL = `SELECT e.received_at, o.last_synced_at FROM (
  SELECT account, order_code, received_at FROM event_log
  WHERE account = ? AND received_at >= ? AND received_at <= ? AND outcome = 'synced' AND order_code <> ''
  ORDER BY received_at DESC LIMIT ?) e
JOIN orders o ON o.account = e.account AND o.order_code = e.order_code
WHERE o.last_event_at = e.received_at AND o.last_synced_at IS NOT NULL`
	// A never-fetched order has no created_at either: saying so lets
	// SQLite seek (account, created_at IS NULL) rather than read every
	// order of the account.
	overviewWaitingSQL       = `SELECT COUNT(*) FROM orders WHERE status = '' AND created_at IS NULL AND account = ?`
	overviewOldestWaitingSQL = `SELECT first_seen_at FROM orders WHERE status = '' AND created_at IS NULL AND account = ?
ORDER BY first_seen_at LIMIT 1`
	overviewUnsentSQL       = `SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL AND id > ` + sentUpTo
	overviewOldestUnsentSQL = `SELECT id, subject, order_code, created_at FROM outbox WHERE sent_at IS NULL AND id > ` + sentUpTo + ` ORDER BY id LIMIT 1`
	// account || '' keeps SQLite off the account's index, which holds
	// every letter ever replayed too, and on the index of those pending.
	overviewDeadLettersSQL = `SELECT reason, COUNT(*) AS n FROM dead_letters WHERE account || '' = ? AND replayed_at IS NULL GROUP BY reason`
	overviewEndpointsSQL   = `SELECT id, url, disabled, disabled_reason FROM endpoints ORDER BY id`
)

// Overview reads the console's overview of account at params.Now in one
// snapshot: what every process sharing the mirror has recorded.
func (db *DB) Overview(ctx context.Context, params ordersync.OverviewParams) (ordersync.Overview, error) {
	p := params.WithDefaults()
	out := ordersync.Overview{Params: p}
	now := dbTime(p.Now)
	since := dbTime(p.Now.Add(-p.Window))
	err := db.inReadTx(ctx, "read the overview of "+p.Account, func(tx *sqlx.Tx) error {
		var counts struct {
			Webhooks int `db:"webhooks"`
			Mirrored int `db:"mirrored"`
		}
		if err := tx.GetContext(ctx, &counts, db.rebind(overviewWebhooksSQL), p.Account, since, now); err != nil {
			return fmt.Errorf("count webhooks: %w", err)
		}
		out.Webhooks, out.Mirrored = counts.Webhooks, counts.Mirrored
		var lags []struct {
			ReceivedAt time.Time `db:"received_at"`
			SyncedAt   time.Time `db:"last_synced_at"`
		}
		if err := tx.SelectContext(ctx, &lags, db.rebind(overviewLagSQL), p.Account, since, now, ordersync.MaxLagSamples); err != nil {
			return fmt.Errorf("read sync lags: %w", err)
		}
		durations := make([]time.Duration, len(lags))
		for i, l := range lags {
			durations[i] = max(0, l.SyncedAt.Sub(l.ReceivedAt))
		}
		out.Lag = ordersync.LagOf(durations)
		if err := tx.GetContext(ctx, &out.Waiting, db.rebind(overviewWaitingSQL), p.Account); err != nil {
			return fmt.Errorf("count orders waiting: %w", err)
		}
		if out.Waiting > 0 {
			if err := tx.GetContext(ctx, &out.OldestWaiting, db.rebind(overviewOldestWaitingSQL), p.Account); err != nil {
				return fmt.Errorf("read the oldest order waiting: %w", err)
			}
			out.OldestWaiting = out.OldestWaiting.UTC()
		}
		var err error
		if out.Checks, err = db.checkBacklog(ctx, tx, p.Account, p.Now); err != nil {
			return fmt.Errorf("read the check backlog: %w", err)
		}
		if err := tx.GetContext(ctx, &out.Unsent, overviewUnsentSQL); err != nil {
			return fmt.Errorf("count unsent outbox messages: %w", err)
		}
		if out.Unsent > 0 {
			var head struct {
				ID        int64     `db:"id"`
				Subject   string    `db:"subject"`
				OrderCode string    `db:"order_code"`
				CreatedAt time.Time `db:"created_at"`
			}
			err := tx.GetContext(ctx, &head, overviewOldestUnsentSQL)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("read the oldest unsent outbox message: %w", err)
			}
			if err == nil {
				out.OldestUnsent = &ordersync.OutboxHead{ID: head.ID, Subject: head.Subject, OrderCode: head.OrderCode, CreatedAt: head.CreatedAt.UTC()}
			}
		}
		var reasons []struct {
			Reason string `db:"reason"`
			N      int    `db:"n"`
		}
		if err := tx.SelectContext(ctx, &reasons, db.rebind(overviewDeadLettersSQL), p.Account); err != nil {
			return fmt.Errorf("count dead letters: %w", err)
		}
		out.DeadLetters = reasonCounts(reasons)
		if out.Endpoints, err = db.endpointHealth(ctx, tx, dbTime(p.Now.Add(-p.HealthWindow))); err != nil {
			return err
		}
		return nil
	})
	return out, err
}

func reasonCounts(rows []struct {
	Reason string `db:"reason"`
	N      int    `db:"n"`
}) []ordersync.ReasonCount {
	var out []ordersync.ReasonCount
	for _, r := range rows {
		out = append(out, ordersync.ReasonCount{Reason: ordersync.DeadLetterReason(r.Reason), Count: r.N})
	}
	ordersync.SortReasonCounts(out)
	return out
}

// endpointHealth is each endpoint with its deliveries ended since since.
func (db *DB) endpointHealth(ctx context.Context, tx *sqlx.Tx, since time.Time) ([]ordersync.EndpointHealth, error) {
	var eps []struct {
		ID             string `db:"id"`
		URL            string `db:"url"`
		Disabled       bool   `db:"disabled"`
		DisabledReason string `db:"disabled_reason"`
	}
	if err := tx.SelectContext(ctx, &eps, overviewEndpointsSQL); err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	if len(eps) == 0 {
		return nil, nil
	}
	out := make([]ordersync.EndpointHealth, len(eps))
	index := map[string]int{}
	for i, e := range eps {
		out[i] = ordersync.EndpointHealth{ID: e.ID, URL: e.URL, Disabled: e.Disabled, DisabledReason: e.DisabledReason}
		index[e.ID] = i
	}
	health, err := db.deliveryHealth(ctx, tx, since)
	if err != nil {
		return nil, err
	}
	for id, h := range health {
		if i, ok := index[id]; ok {
			out[i].DeliveryHealth = h
		}
	}
	pending, err := pendingDeliveryDeadLetters(ctx, tx)
	if err != nil {
		return nil, err
	}
	for id, n := range pending {
		if i, ok := index[id]; ok {
			out[i].DeadLetters = n
		}
	}
	return out, nil
}

var _ ordersync.OverviewReader = (*DB)(nil)
