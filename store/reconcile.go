package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// Reconcile tuning.
const (
	// expirySoon is how close to its expiry a link must be to go first:
	// its order is about to stop changing, and a payment made in the last
	// minutes is the one most worth not missing. expiryPast bounds how long
	// after expiry it still does, so links the service never closes do not
	// hold the front of the queue forever.
	expirySoon            = 15 * time.Minute
	expiryPast            = time.Hour
	defaultReconcileLimit = 100
	maxReconcileLimit     = 10000
)

// ListReconcileCandidates lists orders to re-fetch: unless All, those whose
// status can still change (PENDING, PAID, unknown ones, and placeholders
// never fetched). By priority, links near expiry (from an hour past to 15
// minutes ahead) come first, then the most recently active orders, then the
// least recently synced; with Stalest, the least recently synced come first.
// Since applies to the upstream creation time, or to when ordersync first
// saw a placeholder. Limit defaults to 100 and is capped at 10000.
func (db *DB) ListReconcileCandidates(ctx context.Context, filter ordersync.ReconcileFilter) ([]ordersync.OrderRef, error) {
	now := time.Now()
	where := []string{"1 = 1"}
	var args []any
	if filter.Account != "" {
		where, args = append(where, "account = ?"), append(args, filter.Account)
	}
	if !filter.All {
		var final []string
		for _, s := range ordersync.Statuses {
			if !s.CanChange() {
				final = append(final, string(s))
			}
		}
		clause, clauseArgs := statusOutside(final)
		where, args = append(where, clause), append(args, clauseArgs...)
	}
	if !filter.Since.IsZero() {
		where, args = append(where, "COALESCE(created_at, first_seen_at) >= ?"), append(args, dbTime(filter.Since))
	}
	if !filter.SyncedBefore.IsZero() {
		where, args = append(where, "(last_synced_at IS NULL OR last_synced_at < ?)"), append(args, dbTime(filter.SyncedBefore))
	}
	order := `CASE WHEN expires_at IS NOT NULL AND expires_at <= ? AND expires_at >= ? THEN 0 ELSE 1 END,
         COALESCE(last_event_at, first_seen_at) DESC,
         last_synced_at ASC NULLS FIRST,
         account, order_code`
	if filter.Stalest {
		order = "last_synced_at ASC NULLS FIRST, account, order_code"
	} else {
		args = append(args, dbTime(now.Add(expirySoon)), dbTime(now.Add(-expiryPast)))
	}
	args = append(args, clampLimit(filter.Limit, defaultReconcileLimit, maxReconcileLimit))
	query := `SELECT account, order_code, order_id, order_reference, expires_at FROM orders
WHERE ` + strings.Join(where, " AND ") + `
ORDER BY ` + order + `
LIMIT ?`

	var refs []ordersync.OrderRef
	err := db.inReadTx(ctx, "list reconcile candidates", func(tx *sqlx.Tx) error {
		var rows []struct {
			Account   string     `db:"account"`
			Code      string     `db:"order_code"`
			ID        string     `db:"order_id"`
			Reference string     `db:"order_reference"`
			ExpiresAt *time.Time `db:"expires_at"`
		}
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), args...); err != nil {
			return err
		}
		refs = make([]ordersync.OrderRef, len(rows))
		for i, r := range rows {
			refs[i] = ordersync.OrderRef{Account: r.Account, Code: r.Code, ID: ordersync.ID(r.ID), Reference: r.Reference}
			if r.ExpiresAt != nil {
				refs[i].ExpiresAt = r.ExpiresAt.UTC()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// statusOutside selects the orders whose status is none of final, as ranges
// of the status index: between the final statuses, below the first and
// above the last. "status NOT IN (...)" says the same, but both databases
// answer it by reading every order, mostly final ones in a mirror that has
// run for a while: 89-108 ms per reconciler pass for 50,000 orders on
// SQLite, against 30-34 ms this way (BenchmarkListReconcileCandidates).
// The ranges follow Go's byte order of final, which every collation shares
// for the upper-case ASCII words statuses are.
func statusOutside(final []string) (string, []any) {
	if len(final) == 0 {
		return "1 = 1", nil
	}
	final = slices.Clone(final)
	slices.Sort(final)
	ranges := []string{"status < ?"}
	args := []any{final[0]}
	for i := 1; i < len(final); i++ {
		ranges, args = append(ranges, "(status > ? AND status < ?)"), append(args, final[i-1], final[i])
	}
	ranges, args = append(ranges, "status > ?"), append(args, final[len(final)-1])
	return "(" + strings.Join(ranges, " OR ") + ")", args
}
