package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// orderState is what ApplyOrders knows about a mirrored order: read once per
// batch, then kept current in memory as the batch's params apply.
type orderState struct {
	// ID is the order's row id; 0 until the order has a row.
	ID            int64      `db:"id"`
	Account       string     `db:"account"`
	Code          string     `db:"order_code"`
	Status        string     `db:"status"`
	FetchSeq      int64      `db:"fetch_seq"`
	Hash          string     `db:"document_hash"`
	Fetched       bool       `db:"fetched"`
	PaidFired     bool       `db:"paid_fired"`
	Transitions   int64      `db:"status_transitions"`
	FirstSeenAt   time.Time  `db:"first_seen_at"`
	LastSyncedAt  *time.Time `db:"last_synced_at"`
	LastEventAt   *time.Time `db:"last_event_at"`
	LastEventType string     `db:"last_event_type"`
	FetchCount    int64      `db:"fetch_count"`
	ChangedAt     *time.Time `db:"changed_at"`
	ExpiresAt     *time.Time `db:"expires_at"`
	// PaidAt is written once, by the apply that first sees the order paid.
	PaidAt          *time.Time `db:"paid_at"`
	StatusChangedAt *time.Time `db:"status_changed_at"`
	// PaymentSeen: a document of the order showed a payment
	// (ordersync.Order.HasPaymentEvidence), which a cancellation reverses.
	PaymentSeen bool `db:"payment_seen"`
	// NextCheckAt is when the reconciler next checks the order; nil when
	// its status is final.
	NextCheckAt *time.Time `db:"next_check_at"`
	// OrderID and OrderReference are the row's, which RecordOrderRef may
	// have filled where the stored document had none.
	OrderID        string `db:"order_id"`
	OrderReference string `db:"order_reference"`
}

func (st *orderState) syncInfo() ordersync.SyncInfo {
	return ordersync.SyncInfo{
		FirstSeenAt:     st.FirstSeenAt.UTC(),
		LastSyncedAt:    utcPtr(st.LastSyncedAt),
		LastEventAt:     utcPtr(st.LastEventAt),
		LastEventType:   ordersync.EventType(st.LastEventType),
		FetchCount:      st.FetchCount,
		FetchSeq:        st.FetchSeq,
		PaidAt:          utcPtr(st.PaidAt),
		StatusChangedAt: utcPtr(st.StatusChangedAt),
	}
}

type orderKey struct{ account, code string }

// lockOrderStates reads the state of every order of the batch with one
// query per account (and per maxInParams codes). On PostgreSQL it first
// makes sure each order has a row and then locks the rows, in key order so
// that concurrent batches cannot deadlock: a second process applying the
// same order waits, then sees the first one's fetch_seq. SQLite needs
// neither: the write transaction began IMMEDIATE and holds the database.
func (db *DB) lockOrderStates(ctx context.Context, tx *sqlx.Tx, params []ordersync.ApplyParams) (map[orderKey]*orderState, error) {
	byAccount := map[string][]string{}
	seen := map[orderKey]bool{}
	for _, p := range params {
		k := orderKey{p.Account, p.Order.OrderCode}
		if !seen[k] {
			seen[k] = true
			byAccount[k.account] = append(byAccount[k.account], k.code)
		}
	}
	accounts := make([]string, 0, len(byAccount))
	for a := range byAccount {
		accounts = append(accounts, a)
		slices.Sort(byAccount[a])
	}
	slices.Sort(accounts)

	lockClause := ""
	if db.dialect == DialectPostgres {
		lockClause = " ORDER BY order_code FOR UPDATE"
		now := dbTime(time.Now())
		var rows [][]any
		for _, a := range accounts {
			for _, c := range byAccount[a] {
				rows = append(rows, []any{a, c, now})
			}
		}
		placeholder := rowsSQL{prefix: `INSERT INTO orders (account, order_code, first_seen_at) VALUES `, cols: 3, suffix: ` ON CONFLICT (account, order_code) DO NOTHING`}
		if err := db.execRows(ctx, tx, placeholder, rows); err != nil {
			return nil, fmt.Errorf("insert placeholders: %w", err)
		}
	}

	states := make(map[orderKey]*orderState, len(seen))
	for _, a := range accounts {
		codes := byAccount[a]
		for len(codes) > 0 {
			chunk := codes[:min(len(codes), maxInParams)]
			codes = codes[len(chunk):]
			args := inArgs(db.dialect, []any{a}, chunk)
			size := len(args) - 1
			err := db.queryTxRows(ctx, tx, db.rebind(stateQuery(size)+lockClause), func(rows *sql.Rows) error {
				st, err := scanOrderState(rows)
				if err != nil {
					return err
				}
				states[orderKey{st.Account, st.Code}] = st
				return nil
			}, args...)
			if err != nil {
				return nil, fmt.Errorf("read order states: %w", err)
			}
		}
	}
	return states, nil
}

// scanOrderState scans a row of stateQuery by position: sqlx's scan by
// struct tags costs reflection and an allocation per column and row.
func scanOrderState(rows *sql.Rows) (*orderState, error) {
	st := &orderState{}
	var synced, event, changed, expires, paid, statusChanged, check sql.NullTime
	if err := rows.Scan(&st.ID, &st.Account, &st.Code, &st.Status, &st.FetchSeq, &st.Hash, &st.Fetched, &st.PaidFired,
		&st.Transitions, &st.FirstSeenAt, &synced, &event, &st.LastEventType, &st.FetchCount, &changed, &expires,
		&paid, &statusChanged, &check, &st.OrderID, &st.OrderReference, &st.PaymentSeen); err != nil {
		return nil, err
	}
	st.LastSyncedAt, st.LastEventAt, st.ChangedAt, st.ExpiresAt = timePtr(synced), timePtr(event), timePtr(changed), timePtr(expires)
	st.PaidAt, st.StatusChangedAt, st.NextCheckAt = timePtr(paid), timePtr(statusChanged), timePtr(check)
	return st, nil
}

// stateQuery reads the states of n orders of one account, in the columns'
// order scanOrderState scans.
func stateQuery(n int) string {
	return `SELECT id, account, order_code, status, fetch_seq, document_hash, raw_document IS NOT NULL AS fetched, paid_fired,
       status_transitions, first_seen_at, last_synced_at, last_event_at, last_event_type, fetch_count, changed_at, expires_at,
       paid_at, status_changed_at, next_check_at, order_id, order_reference,
       (payment_authorization_code <> '' OR buyer_name <> '' OR buyer_email <> '' OR buyer_phone <> '') AS payment_seen
FROM orders WHERE account = ? AND order_code IN (` + placeholders(n) + `)`
}

// inArgs is prefix followed by chunk's values: the arguments of a query
// whose IN list has a placeholder per value. On SQLite the list is padded
// to stateQuerySize by repeating its last value, which matches no row
// twice, so that a few prepared statements serve every size.
func inArgs[T any](dialect string, prefix []any, chunk []T) []any {
	size := len(chunk)
	if dialect == DialectSQLite {
		size = stateQuerySize(size)
	}
	args := make([]any, len(prefix), len(prefix)+size)
	copy(args, prefix)
	for i := range size {
		args = append(args, chunk[min(i, len(chunk)-1)])
	}
	return args
}

// stateQuerySize is the prepared size of stateQuery that n codes use: the
// next power of two.
func stateQuerySize(n int) int {
	size := 1
	for size < n {
		size *= 2
	}
	return size
}

// previousDocuments reads the stored documents of the orders whose
// document changed and that were fetched before the batch, before the batch
// overwrites them: the batch's first change of each is compared with it,
// and its row is written only where it differs (writeBatch). The checks
// that find nothing new read no document.
func (db *DB) previousDocuments(ctx context.Context, tx *sqlx.Tx, b *batch) error {
	byAccount := map[string][]*batchOrder{}
	for _, k := range b.keys {
		if bo := b.orders[k]; bo.changed && bo.hadDetails {
			byAccount[k.account] = append(byAccount[k.account], bo)
		}
	}
	for account, orders := range byAccount {
		for len(orders) > 0 {
			chunk := orders[:min(len(orders), maxInParams)]
			orders = orders[len(chunk):]
			byCode := make(map[string]*batchOrder, len(chunk))
			codes := make([]string, len(chunk))
			for i, bo := range chunk {
				codes[i] = bo.st.Code
				byCode[bo.st.Code] = bo
			}
			args := inArgs(db.dialect, []any{account}, codes)
			size := len(args) - 1
			// Each document is decoded as it is read (DecodeOrder copies
			// what it keeps), so its bytes are the driver's, not a copy.
			err := db.queryTxRows(ctx, tx, db.rebind(previousDocumentsQuery(size)), func(rows *sql.Rows) error {
				var code, doc sql.RawBytes
				if err := rows.Scan(&code, &doc); err != nil {
					return err
				}
				if bo := byCode[string(code)]; bo != nil && doc != nil {
					bo.storedOrder, _ = ordersync.DecodeOrder(doc)
				}
				return nil
			}, args...)
			if err != nil {
				return fmt.Errorf("read the documents changes are compared with: %w", err)
			}
		}
	}
	for i := range b.changes {
		if c := &b.changes[i]; c.prev == nil {
			c.prev = b.orders[c.key].storedOrder
		}
	}
	return nil
}

// previousDocumentsQuery reads the stored documents of n orders of one
// account.
func previousDocumentsQuery(n int) string {
	return `SELECT order_code, raw_document FROM orders WHERE account = ? AND order_code IN (` + placeholders(n) + `)`
}

// mirrorState is what ordersync.ChangeOf works out the order's change
// against: nil when the mirror never fetched it.
func (st *orderState) mirrorState() *ordersync.MirrorState {
	if !st.Fetched {
		return nil
	}
	return &ordersync.MirrorState{Status: ordersync.Status(st.Status), DocumentHash: st.Hash, PaidFired: st.PaidFired, Transitions: st.Transitions}
}

// scheduleNextCheck sets when the reconciler next checks the order, as of
// now, by the domain's schedule: its last activity is when ordersync first
// saw it, its last webhook, or the last fetch that found it changed; dense
// is its account's evidence of lost webhooks.
func (st *orderState) scheduleNextCheck(status ordersync.Status, now time.Time, dense ordersync.DenseChecks) {
	active := st.FirstSeenAt
	for _, t := range []*time.Time{st.LastEventAt, st.ChangedAt} {
		if t != nil && t.After(active) {
			active = *t
		}
	}
	cs := ordersync.CheckState{Code: st.Code, Status: status, ActiveAt: active, LastEventType: ordersync.EventType(st.LastEventType), Dense: dense}
	if st.ExpiresAt != nil {
		cs.ExpiresAt = *st.ExpiresAt
	}
	st.NextCheckAt = nil
	if due, ok := ordersync.NextCheck(cs, now); ok {
		due = dbTime(due)
		st.NextCheckAt = &due
	}
}

// paymentAnnouncements reads, for each order of the batch that a fetch may
// find paid for the first time (or cancelled, which may reverse a payment), the earliest receipt of a webhook logged for
// it that announced the payment: a webhook may have come before a fetch that
// saw the order still unpaid, or with a fetch that lost to a newer one.
func (db *DB) paymentAnnouncements(ctx context.Context, tx *sqlx.Tx, params []ordersync.ApplyParams, states map[orderKey]*orderState) (map[orderKey]time.Time, error) {
	byAccount := map[string][]string{}
	seen := map[orderKey]bool{}
	for _, p := range params {
		k := orderKey{p.Account, p.Order.OrderCode}
		// A cancellation may reverse a payment a webhook announced
		// (ordersync.ReversesPayment).
		if seen[k] || !(p.Order.OrderStatus.IsPaidState() || p.Order.OrderStatus == ordersync.StatusCancelled) {
			continue
		}
		if st := states[k]; st != nil && (st.PaidFired || st.PaidAt != nil) {
			continue
		}
		seen[k] = true
		byAccount[k.account] = append(byAccount[k.account], k.code)
	}
	announced := map[orderKey]time.Time{}
	types := []any{string(ordersync.EventSuccessPayment), string(ordersync.EventFinalized)}
	for account, codes := range byAccount {
		for len(codes) > 0 {
			chunk := codes[:min(len(codes), maxInParams)]
			codes = codes[len(chunk):]
			codeArgs := inArgs(db.dialect, nil, chunk)
			size := len(codeArgs)
			args := slices.Concat([]any{account}, types, codeArgs, []any{account}, codeArgs, types)
			var rows []struct {
				Code       string    `db:"order_code"`
				ReceivedAt time.Time `db:"received_at"`
			}
			if err := db.selectTx(ctx, tx, &rows, db.rebind(announcementsQuery(size)), args...); err != nil {
				return nil, fmt.Errorf("read payment webhooks: %w", err)
			}
			for _, r := range rows {
				k := orderKey{account, r.Code}
				if at, ok := announced[k]; !ok || r.ReceivedAt.Before(at) {
					announced[k] = dbTime(r.ReceivedAt)
				}
			}
		}
	}
	return announced, nil
}

// announcementsQuery reads the payment webhooks logged for n orders of
// one account. An order's events are those logged under its row and those
// of its code logged without one (migration 20).
func announcementsQuery(n int) string {
	return `SELECT order_code, received_at FROM event_log
WHERE account = ? AND type IN (?, ?) AND order_code IN (` + placeholders(n) + `) AND order_code <> '' AND order_row IS NULL
UNION ALL
SELECT o.order_code, e.received_at FROM orders o JOIN event_log e ON e.order_row = o.id
WHERE o.account = ? AND o.order_code IN (` + placeholders(n) + `) AND e.type IN (?, ?)`
}
