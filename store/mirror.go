package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	var last int64
	err := db.inTx(ctx, fmt.Sprintf("allocate %d fetch sequence numbers", n), func(tx *sqlx.Tx) error {
		return tx.QueryRowxContext(ctx, db.rebind(`UPDATE fetch_sequence SET value = value + ? WHERE id = 1 RETURNING value`), n).Scan(&last)
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
		_, err := tx.ExecContext(ctx, db.rebind(`
INSERT INTO orders (account, order_code, order_id, order_reference, expires_at, first_seen_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (account, order_code) DO UPDATE SET
    order_id = CASE WHEN orders.order_id = '' THEN excluded.order_id ELSE orders.order_id END,
    order_reference = CASE WHEN orders.order_reference = '' THEN excluded.order_reference ELSE orders.order_reference END,
    expires_at = COALESCE(orders.expires_at, excluded.expires_at)`),
			ref.Account, ref.Code, string(ref.ID), ref.Reference, nullTime(ref.ExpiresAt), dbTime(time.Now()))
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
	var code string
	err := db.inReadTx(ctx, op, func(tx *sqlx.Tx) error {
		if ref.ID != "" {
			err := tx.GetContext(ctx, &code, db.rebind(`
SELECT order_code FROM orders WHERE account = ? AND order_id = ?
ORDER BY COALESCE(created_at, first_seen_at) DESC LIMIT 1`), ref.Account, string(ref.ID))
			if err == nil || ref.Reference == "" {
				return err
			}
		}
		return tx.GetContext(ctx, &code, db.rebind(`
SELECT order_code FROM orders WHERE account = ? AND order_reference = ?
ORDER BY COALESCE(created_at, first_seen_at) DESC LIMIT 1`), ref.Account, ref.Reference)
	})
	return code, err
}

// RecordEvents adds event log rows; a MsgID already logged takes the new
// outcome and detail, and any keys it lacked.
func (db *DB) RecordEvents(ctx context.Context, events []ordersync.EventRecord) error {
	if len(events) == 0 {
		return nil
	}
	op := fmt.Sprintf("record %d events", len(events))
	for _, ev := range events {
		if ev.MsgID == "" || ev.Account == "" {
			return fmt.Errorf("%s: event %q: MsgID and Account are required", op, ev.MsgID)
		}
	}
	now := time.Now()
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		stmt, err := tx.PreparexContext(ctx, db.rebind(upsertEventSQL))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, ev := range events {
			if err := execEvent(ctx, stmt, ev, now); err != nil {
				return err
			}
		}
		return nil
	})
}

const upsertEventSQL = `
INSERT INTO event_log (msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (msg_id) DO UPDATE SET
    outcome = excluded.outcome,
    detail = excluded.detail,
    type = CASE WHEN excluded.type <> '' THEN excluded.type ELSE event_log.type END,
    order_type = CASE WHEN excluded.order_type <> '' THEN excluded.order_type ELSE event_log.order_type END,
    order_id = CASE WHEN excluded.order_id <> '' THEN excluded.order_id ELSE event_log.order_id END,
    order_reference = CASE WHEN excluded.order_reference <> '' THEN excluded.order_reference ELSE event_log.order_reference END,
    order_code = CASE WHEN excluded.order_code <> '' THEN excluded.order_code ELSE event_log.order_code END,
    signature = CASE WHEN excluded.signature <> '' THEN excluded.signature ELSE event_log.signature END`

func execEvent(ctx context.Context, stmt *sqlx.Stmt, ev ordersync.EventRecord, now time.Time) error {
	received := ev.ReceivedAt
	if received.IsZero() {
		received = now
	}
	_, err := stmt.ExecContext(ctx, ev.MsgID, ev.Account, dbTime(received), string(ev.Type), ev.OrderType,
		string(ev.OrderID), ev.OrderReference, ev.OrderCode, string(ev.Signature), string(ev.Outcome), ev.Detail)
	if err != nil {
		return fmt.Errorf("log event %s: %w", ev.MsgID, err)
	}
	return nil
}

// orderState is what ApplyOrders needs to know about a mirrored order
// before it writes.
type orderState struct {
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
}

type orderKey struct{ account, code string }

// applyStmts are the statements ApplyOrders prepares once per batch.
type applyStmts struct {
	upsertOrder, touchOrder     *sqlx.Stmt
	deleteItems, deleteMetadata *sqlx.Stmt
	insertItem, insertMetadata  *sqlx.Stmt
	insertHistory, insertOutbox *sqlx.Stmt
	upsertEvent                 *sqlx.Stmt
	all                         []*sqlx.Stmt
}

func (s *applyStmts) close() {
	for _, st := range s.all {
		st.Close()
	}
}

func (db *DB) prepareApply(ctx context.Context, tx *sqlx.Tx) (*applyStmts, error) {
	s := &applyStmts{}
	for _, p := range []struct {
		dst   **sqlx.Stmt
		query string
	}{
		{&s.upsertOrder, upsertOrderSQL},
		{&s.touchOrder, `UPDATE orders SET fetch_seq = ?, fetch_count = ?, last_synced_at = ?, last_event_at = ?, last_event_type = ? WHERE account = ? AND order_code = ?`},
		{&s.deleteItems, `DELETE FROM order_line_items WHERE account = ? AND order_code = ?`},
		{&s.deleteMetadata, `DELETE FROM order_metadata WHERE account = ? AND order_code = ?`},
		{&s.insertItem, `INSERT INTO order_line_items (account, order_code, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.insertMetadata, `INSERT INTO order_metadata (account, order_code, position, name, value) VALUES (?, ?, ?, ?, ?)`},
		{&s.insertHistory, `INSERT INTO status_history (account, order_code, from_status, to_status, fetch_seq, at, cause) VALUES (?, ?, ?, ?, ?, ?, ?)`},
		{&s.insertOutbox, `INSERT INTO outbox (account, order_code, subject, msg_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`},
		{&s.upsertEvent, upsertEventSQL},
	} {
		st, err := tx.PreparexContext(ctx, db.rebind(p.query))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("prepare: %w", err)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	return s, nil
}

var orderColumns = []string{
	"account", "order_code", "order_id", "order_reference", "name", "description", "status",
	"subtotal", "shipping_amount", "discount_amount", "surcharge_amount", "total",
	"payment_link_url", "success_url", "cancel_url", "created_at",
	"store_name", "store_country_code", "store_currency_code", "store_currency_symbol", "store_locale", "store_timezone",
	"has_payment", "payment_authorization_code", "payment_voucher_url", "buyer_name", "buyer_phone", "buyer_email",
	"raw_document", "document_hash",
	"first_seen_at", "last_synced_at", "last_event_at", "last_event_type",
	"fetch_count", "fetch_seq", "paid_fired", "status_transitions",
}

// upsertOrderSQL writes every column of a fetched order. On conflict it
// keeps the row's first_seen_at and expires_at, which belong to ordersync.
var upsertOrderSQL = func() string {
	var set []string
	for _, c := range orderColumns {
		if c != "account" && c != "order_code" && c != "first_seen_at" {
			set = append(set, c+" = excluded."+c)
		}
	}
	return "INSERT INTO orders (" + strings.Join(orderColumns, ", ") + ") VALUES (" + placeholders(len(orderColumns)) +
		") ON CONFLICT (account, order_code) DO UPDATE SET " + strings.Join(set, ", ")
}()

// ApplyOrders writes a batch of fetched orders, their status history,
// outbox messages and event log rows in one transaction. Params apply in
// order; one whose Seq is not above the mirror's is stale and only logs its
// events.
func (db *DB) ApplyOrders(ctx context.Context, params []ordersync.ApplyParams) ([]ordersync.ApplyResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	op := fmt.Sprintf("apply %d orders", len(params))
	for i, p := range params {
		switch {
		case p.Account == "":
			return nil, fmt.Errorf("%s: params[%d]: Account is required", op, i)
		case p.Order == nil || p.Order.OrderCode == "":
			return nil, fmt.Errorf("%s: params[%d]: Order with an OrderCode is required", op, i)
		case p.Seq < 1:
			return nil, fmt.Errorf("%s: params[%d] (%s): Seq must be positive, got %d", op, i, p.Order.OrderCode, p.Seq)
		}
	}
	var results []ordersync.ApplyResult
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		states, err := db.lockOrderStates(ctx, tx, params)
		if err != nil {
			return err
		}
		stmts, err := db.prepareApply(ctx, tx)
		if err != nil {
			return err
		}
		defer stmts.close()
		a := applier{ctx: ctx, stmts: stmts, states: states, now: time.Now()}
		results = make([]ordersync.ApplyResult, len(params))
		for i := range params {
			if results[i], err = a.apply(&params[i]); err != nil {
				return fmt.Errorf("order %s/%s: %w", params[i].Account, params[i].Order.OrderCode, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

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
		stmt, err := tx.PreparexContext(ctx, db.rebind(`INSERT INTO orders (account, order_code, first_seen_at) VALUES (?, ?, ?) ON CONFLICT (account, order_code) DO NOTHING`))
		if err != nil {
			return nil, fmt.Errorf("prepare placeholder: %w", err)
		}
		defer stmt.Close()
		now := dbTime(time.Now())
		for _, a := range accounts {
			for _, c := range byAccount[a] {
				if _, err := stmt.ExecContext(ctx, a, c, now); err != nil {
					return nil, fmt.Errorf("insert placeholder %s/%s: %w", a, c, err)
				}
			}
		}
	}

	states := make(map[orderKey]*orderState, len(seen))
	for _, a := range accounts {
		codes := byAccount[a]
		for len(codes) > 0 {
			chunk := codes[:min(len(codes), maxInParams)]
			codes = codes[len(chunk):]
			args := make([]any, 0, len(chunk)+1)
			args = append(args, a)
			for _, c := range chunk {
				args = append(args, c)
			}
			var rows []orderState
			err := tx.SelectContext(ctx, &rows, db.rebind(`
SELECT account, order_code, status, fetch_seq, document_hash, raw_document IS NOT NULL AS fetched, paid_fired,
       status_transitions, first_seen_at, last_synced_at, last_event_at, last_event_type, fetch_count
FROM orders WHERE account = ? AND order_code IN (`+placeholders(len(chunk))+`)`+lockClause), args...)
			if err != nil {
				return nil, fmt.Errorf("read order states: %w", err)
			}
			for i := range rows {
				states[orderKey{rows[i].Account, rows[i].Code}] = &rows[i]
			}
		}
	}
	return states, nil
}

// applier applies the params of one batch against the states read for it,
// keeping the states current so that later params for the same order see
// the earlier ones.
type applier struct {
	ctx    context.Context
	stmts  *applyStmts
	states map[orderKey]*orderState
	now    time.Time
}

func (a *applier) apply(p *ordersync.ApplyParams) (ordersync.ApplyResult, error) {
	o := p.Order
	key := orderKey{p.Account, o.OrderCode}
	st := a.states[key]
	exists := st != nil
	if !exists {
		st = &orderState{Account: p.Account, Code: o.OrderCode}
		a.states[key] = st
	}

	events := make([]ordersync.EventRecord, len(p.Events))
	for i, ev := range p.Events {
		if ev.MsgID == "" {
			return ordersync.ApplyResult{}, fmt.Errorf("event %d has no MsgID", i)
		}
		if ev.Account == "" {
			ev.Account = p.Account
		}
		if ev.ReceivedAt.IsZero() {
			ev.ReceivedAt = a.now
		}
		ev.OrderCode = o.OrderCode
		if ev.OrderID == "" {
			ev.OrderID = o.OrderID
		}
		if ev.OrderReference == "" {
			ev.OrderReference = o.OrderReference
		}
		ev.Outcome = ordersync.OutcomeSynced
		events[i] = ev
	}
	for _, ev := range events {
		if err := execEvent(a.ctx, a.stmts.upsertEvent, ev, a.now); err != nil {
			return ordersync.ApplyResult{}, err
		}
	}

	prev := ordersync.Status(st.Status)
	if st.FetchSeq >= p.Seq {
		return ordersync.ApplyResult{PreviousStatus: prev, Status: prev}, nil
	}

	doc := []byte(o.Raw)
	if len(doc) == 0 {
		var err error
		if doc, err = json.Marshal(o); err != nil {
			return ordersync.ApplyResult{}, fmt.Errorf("encode order detail: %w", err)
		}
	}
	sum := sha256.Sum256(doc)
	hash := hex.EncodeToString(sum[:])

	res := ordersync.ApplyResult{Applied: true, Created: !st.Fetched, Changed: !st.Fetched || st.Hash != hash, Status: o.OrderStatus}
	if st.Fetched {
		res.PreviousStatus = prev
	}

	// Bookkeeping, applied on every newer fetch.
	fetchedAt := p.FetchedAt
	if fetchedAt.IsZero() {
		fetchedAt = a.now
	}
	fetchedAt = dbTime(fetchedAt)
	if !exists {
		st.FirstSeenAt = dbTime(a.now)
	}
	st.FetchSeq = p.Seq
	st.FetchCount++
	st.LastSyncedAt = &fetchedAt
	for _, ev := range events {
		if at := dbTime(ev.ReceivedAt); st.LastEventAt == nil || at.After(*st.LastEventAt) {
			st.LastEventAt, st.LastEventType = &at, string(ev.Type)
		}
	}

	if !res.Changed {
		_, err := a.stmts.touchOrder.ExecContext(a.ctx, st.FetchSeq, st.FetchCount, fetchedAt, nullTimePtr(st.LastEventAt), st.LastEventType, p.Account, o.OrderCode)
		if err != nil {
			return res, fmt.Errorf("update sync bookkeeping: %w", err)
		}
		return res, nil
	}

	statusChanged := !st.Fetched || prev != o.OrderStatus
	if statusChanged {
		st.Transitions++
	}
	firePaid := !st.PaidFired && o.OrderStatus.IsPaidState()
	if firePaid {
		st.PaidFired = true
		res.Paid = true
	}
	if err := a.writeOrder(p, st, doc, hash); err != nil {
		return res, err
	}
	st.Status, st.Hash, st.Fetched = string(o.OrderStatus), hash, true

	if !statusChanged && !firePaid {
		return res, nil
	}
	payload, err := json.Marshal(ordersync.MirroredOrder{Account: p.Account, Order: withRaw(o, doc), Sync: st.syncInfo()})
	if err != nil {
		return res, fmt.Errorf("encode outbox payload: %w", err)
	}
	if statusChanged {
		if _, err := a.stmts.insertHistory.ExecContext(a.ctx, p.Account, o.OrderCode, string(res.PreviousStatus), string(o.OrderStatus), p.Seq, fetchedAt, string(p.Cause)); err != nil {
			return res, fmt.Errorf("insert status history: %w", err)
		}
		msgID := p.Account + ":" + o.OrderCode + ":status:" + string(o.OrderStatus) + ":" + strconv.FormatInt(st.Transitions, 10)
		if err := a.queue(p.Account, o.OrderCode, ordersync.SubjectStatusPrefix+string(o.OrderStatus), msgID, payload); err != nil {
			return res, err
		}
	}
	if firePaid {
		if err := a.queue(p.Account, o.OrderCode, ordersync.SubjectPaid, p.Account+":"+o.OrderCode+":paid", payload); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (a *applier) queue(account, code, subject, msgID string, payload []byte) error {
	if _, err := a.stmts.insertOutbox.ExecContext(a.ctx, account, code, subject, msgID, payload, dbTime(a.now)); err != nil {
		return fmt.Errorf("queue outbox message %s: %w", msgID, err)
	}
	return nil
}

// writeOrder writes every column of a changed order and replaces its line
// items and metadata.
func (a *applier) writeOrder(p *ordersync.ApplyParams, st *orderState, doc []byte, hash string) error {
	o := p.Order
	var pay ordersync.Payment
	if o.Payment != nil {
		pay = *o.Payment
	}
	var buyer ordersync.Buyer
	if pay.Buyer != nil {
		buyer = *pay.Buyer
	}
	_, err := a.stmts.upsertOrder.ExecContext(a.ctx,
		p.Account, o.OrderCode, string(o.OrderID), o.OrderReference, o.Name, o.Description, string(o.OrderStatus),
		o.Subtotal, o.TotalDetails.ShippingAmount, o.TotalDetails.DiscountAmount, o.TotalDetails.SurchargeAmount, o.Total,
		o.PaymentLinkURL, o.SuccessURL, o.CancelURL, nullTime(o.Created.Time),
		o.Store.Name, o.Store.CountryCode, o.Store.CurrencyCode, o.Store.CurrencySymbol, o.Store.Locale, o.Store.Timezone,
		o.Payment != nil, pay.AuthorizationCode, pay.VoucherURL, buyer.Name, buyer.Phone, buyer.Email,
		string(doc), hash,
		st.FirstSeenAt, nullTimePtr(st.LastSyncedAt), nullTimePtr(st.LastEventAt), st.LastEventType,
		st.FetchCount, st.FetchSeq, st.PaidFired, st.Transitions,
	)
	if err != nil {
		return fmt.Errorf("write order: %w", err)
	}
	if st.Fetched {
		if _, err := a.stmts.deleteItems.ExecContext(a.ctx, p.Account, o.OrderCode); err != nil {
			return fmt.Errorf("delete line items: %w", err)
		}
		if _, err := a.stmts.deleteMetadata.ExecContext(a.ctx, p.Account, o.OrderCode); err != nil {
			return fmt.Errorf("delete metadata: %w", err)
		}
	}
	for i, li := range o.LineItems {
		var promo any
		if li.PromoPrice != nil {
			promo = *li.PromoPrice
		}
		if _, err := a.stmts.insertItem.ExecContext(a.ctx, p.Account, o.OrderCode, i, string(li.ProductID), li.SKU, li.Name,
			li.Price, promo, li.Quantity, li.ImageURL, li.SubTotal); err != nil {
			return fmt.Errorf("insert line item %d: %w", i, err)
		}
	}
	for i, m := range o.Metadata {
		if _, err := a.stmts.insertMetadata.ExecContext(a.ctx, p.Account, o.OrderCode, i, m.Name, m.Value); err != nil {
			return fmt.Errorf("insert metadata %d: %w", i, err)
		}
	}
	return nil
}

func (st *orderState) syncInfo() ordersync.SyncInfo {
	return ordersync.SyncInfo{
		FirstSeenAt:   st.FirstSeenAt.UTC(),
		LastSyncedAt:  utcPtr(st.LastSyncedAt),
		LastEventAt:   utcPtr(st.LastEventAt),
		LastEventType: ordersync.EventType(st.LastEventType),
		FetchCount:    st.FetchCount,
		FetchSeq:      st.FetchSeq,
	}
}

// withRaw returns a copy of o carrying doc as its raw document.
func withRaw(o *ordersync.Order, doc []byte) ordersync.Order {
	c := *o
	c.Raw = doc
	return c
}

func nullTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return dbTime(*t)
}
