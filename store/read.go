package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// Limits of the list queries.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// orderRow is one row of orders as the readers select it.
type orderRow struct {
	ID                  int64            `db:"id"`
	Account             string           `db:"account"`
	OrderCode           string           `db:"order_code"`
	OrderID             string           `db:"order_id"`
	OrderReference      string           `db:"order_reference"`
	Name                string           `db:"name"`
	Description         string           `db:"description"`
	Status              string           `db:"status"`
	Subtotal            ordersync.Amount `db:"subtotal"`
	ShippingAmount      ordersync.Amount `db:"shipping_amount"`
	DiscountAmount      ordersync.Amount `db:"discount_amount"`
	SurchargeAmount     ordersync.Amount `db:"surcharge_amount"`
	Total               ordersync.Amount `db:"total"`
	PaymentLinkURL      string           `db:"payment_link_url"`
	SuccessURL          string           `db:"success_url"`
	CancelURL           string           `db:"cancel_url"`
	CreatedAt           *time.Time       `db:"created_at"`
	StoreName           string           `db:"store_name"`
	StoreCountryCode    string           `db:"store_country_code"`
	StoreCurrencyCode   string           `db:"store_currency_code"`
	StoreCurrencySymbol string           `db:"store_currency_symbol"`
	StoreLocale         string           `db:"store_locale"`
	StoreTimezone       string           `db:"store_timezone"`
	HasPayment          bool             `db:"has_payment"`
	AuthorizationCode   string           `db:"payment_authorization_code"`
	VoucherURL          string           `db:"payment_voucher_url"`
	BuyerName           string           `db:"buyer_name"`
	BuyerPhone          string           `db:"buyer_phone"`
	BuyerEmail          string           `db:"buyer_email"`
	Raw                 *string          `db:"raw_document"`
	FirstSeenAt         time.Time        `db:"first_seen_at"`
	LastSyncedAt        *time.Time       `db:"last_synced_at"`
	LastEventAt         *time.Time       `db:"last_event_at"`
	LastEventType       string           `db:"last_event_type"`
	FetchCount          int64            `db:"fetch_count"`
	FetchSeq            int64            `db:"fetch_seq"`
	PaidAt              *time.Time       `db:"paid_at"`
	StatusChangedAt     *time.Time       `db:"status_changed_at"`
	TotalKey            *string          `db:"total_key"`
}

// orderColumn is a column of orders as the readers select it, and where
// its value is scanned to: a field of the row, or for a nullable one a
// field of nulls that queryOrderRows moves into the row.
type orderColumn struct {
	name string
	dest func(r *orderRow, n *orderNulls) any
}

// orderNulls holds the nullable columns of one row while it is scanned.
type orderNulls struct {
	created, synced, event, paid, changed sql.NullTime
	key                                   sql.NullString
}

// orderColumns are the columns of orderRow in the order a full read
// selects them (orderRowColumns).
var orderColumns = []orderColumn{
	{"id", func(r *orderRow, _ *orderNulls) any { return &r.ID }},
	{"account", func(r *orderRow, _ *orderNulls) any { return &r.Account }},
	{"order_code", func(r *orderRow, _ *orderNulls) any { return &r.OrderCode }},
	{"order_id", func(r *orderRow, _ *orderNulls) any { return &r.OrderID }},
	{"order_reference", func(r *orderRow, _ *orderNulls) any { return &r.OrderReference }},
	{"name", func(r *orderRow, _ *orderNulls) any { return &r.Name }},
	{"description", func(r *orderRow, _ *orderNulls) any { return &r.Description }},
	{"status", func(r *orderRow, _ *orderNulls) any { return &r.Status }},
	{"subtotal", func(r *orderRow, _ *orderNulls) any { return &r.Subtotal }},
	{"shipping_amount", func(r *orderRow, _ *orderNulls) any { return &r.ShippingAmount }},
	{"discount_amount", func(r *orderRow, _ *orderNulls) any { return &r.DiscountAmount }},
	{"surcharge_amount", func(r *orderRow, _ *orderNulls) any { return &r.SurchargeAmount }},
	{"total", func(r *orderRow, _ *orderNulls) any { return &r.Total }},
	{"payment_link_url", func(r *orderRow, _ *orderNulls) any { return &r.PaymentLinkURL }},
	{"success_url", func(r *orderRow, _ *orderNulls) any { return &r.SuccessURL }},
	{"cancel_url", func(r *orderRow, _ *orderNulls) any { return &r.CancelURL }},
	{"created_at", func(_ *orderRow, n *orderNulls) any { return &n.created }},
	{"store_name", func(r *orderRow, _ *orderNulls) any { return &r.StoreName }},
	{"store_country_code", func(r *orderRow, _ *orderNulls) any { return &r.StoreCountryCode }},
	{"store_currency_code", func(r *orderRow, _ *orderNulls) any { return &r.StoreCurrencyCode }},
	{"store_currency_symbol", func(r *orderRow, _ *orderNulls) any { return &r.StoreCurrencySymbol }},
	{"store_locale", func(r *orderRow, _ *orderNulls) any { return &r.StoreLocale }},
	{"store_timezone", func(r *orderRow, _ *orderNulls) any { return &r.StoreTimezone }},
	{"has_payment", func(r *orderRow, _ *orderNulls) any { return &r.HasPayment }},
	{"payment_authorization_code", func(r *orderRow, _ *orderNulls) any { return &r.AuthorizationCode }},
	{"payment_voucher_url", func(r *orderRow, _ *orderNulls) any { return &r.VoucherURL }},
	{"buyer_name", func(r *orderRow, _ *orderNulls) any { return &r.BuyerName }},
	{"buyer_phone", func(r *orderRow, _ *orderNulls) any { return &r.BuyerPhone }},
	{"buyer_email", func(r *orderRow, _ *orderNulls) any { return &r.BuyerEmail }},
	{"first_seen_at", func(r *orderRow, _ *orderNulls) any { return &r.FirstSeenAt }},
	{"last_synced_at", func(_ *orderRow, n *orderNulls) any { return &n.synced }},
	{"last_event_at", func(_ *orderRow, n *orderNulls) any { return &n.event }},
	{"last_event_type", func(r *orderRow, _ *orderNulls) any { return &r.LastEventType }},
	{"fetch_count", func(r *orderRow, _ *orderNulls) any { return &r.FetchCount }},
	{"fetch_seq", func(r *orderRow, _ *orderNulls) any { return &r.FetchSeq }},
	{"paid_at", func(_ *orderRow, n *orderNulls) any { return &n.paid }},
	{"status_changed_at", func(_ *orderRow, n *orderNulls) any { return &n.changed }},
	{"total_key", func(_ *orderRow, n *orderNulls) any { return &n.key }},
}

// orderColumnSet is the columns of orders one read selects, in order.
type orderColumnSet struct {
	list string // the select list
	cols []orderColumn
}

// columnSet is the set of the named columns of orderColumns, in the order
// of orderColumns, each once; every name must be one of them.
func columnSet(names ...string) orderColumnSet {
	var set orderColumnSet
	var list []string
	for _, c := range orderColumns {
		if slices.Contains(names, c.name) {
			set.cols, list = append(set.cols, c), append(list, c.name)
		}
	}
	if len(set.cols) != len(slices.Compact(slices.Sorted(slices.Values(names)))) {
		panic(fmt.Sprintf("columnSet %v: not every name is a column of orders", names))
	}
	set.list = strings.Join(list, ", ")
	return set
}

// everyOrderColumn is every column of orderRow: a listing's page and
// ExportEveryField.
var everyOrderColumn = func() orderColumnSet {
	names := make([]string, len(orderColumns))
	for i, c := range orderColumns {
		names[i] = c.name
	}
	return columnSet(names...)
}()

// orderRowColumns is the select list of every column of orderRow.
var orderRowColumns = everyOrderColumn.list

// exportColumns are the columns an export of fields reads in sort: the
// fields' (ordersync.ExportFields), the row id and the sort's value, which
// the next batch's keyset continues from. An export reads every order, and
// on SQLite each column read is a call into the database: the orders file
// needs 20 of the 38, the line items' and status changes' files 6.
func exportColumns(fields ordersync.ExportFields, sort ordersync.OrderSort) orderColumnSet {
	var names []string
	switch fields {
	case ordersync.ExportOrderFields:
		names = []string{"account", "order_code", "order_id", "order_reference", "name", "status", "store_currency_code",
			"subtotal", "total", "shipping_amount", "discount_amount", "surcharge_amount", "created_at",
			"has_payment", "payment_authorization_code", "buyer_name", "buyer_phone", "buyer_email", "paid_at", "status_changed_at"}
	case ordersync.ExportRepeatedFields:
		names = []string{"account", "order_code", "order_reference", "status", "store_currency_code", "created_at"}
	default:
		return everyOrderColumn
	}
	names = append(names, "id")
	switch sort.Key() {
	case "created":
		names = append(names, "created_at")
	case "paid":
		names = append(names, "paid_at")
	case "total":
		names = append(names, "total", "total_key")
	}
	return columnSet(names...)
}

// queryOrderRows runs query, which selects set's columns, in tx and scans
// its rows into fields by position: a listing's page and an export's batch
// of 1,000 read up to 38 columns a row, and sqlx's scan by struct tags
// (reflection per column) cost as much as the driver's own work there.
// The fields of columns not in set are left empty.
func queryOrderRows(ctx context.Context, tx *sqlx.Tx, set orderColumnSet, query string, args ...any) ([]orderRow, error) {
	res, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var (
		out   []orderRow
		nulls orderNulls
		dests = make([]any, len(set.cols))
	)
	for res.Next() {
		out = append(out, orderRow{})
		r := &out[len(out)-1]
		for i, c := range set.cols {
			dests[i] = c.dest(r, &nulls)
		}
		if err := res.Scan(dests...); err != nil {
			return nil, err
		}
		r.CreatedAt, r.LastSyncedAt, r.LastEventAt = timePtr(nulls.created), timePtr(nulls.synced), timePtr(nulls.event)
		r.PaidAt, r.StatusChangedAt = timePtr(nulls.paid), timePtr(nulls.changed)
		if nulls.key.Valid {
			key := nulls.key.String
			r.TotalKey = &key
		}
	}
	if err := res.Close(); err != nil {
		return nil, err
	}
	return out, res.Err()
}

// timePtr is a scanned nullable time as orderRow holds it.
func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

type metadataRow struct {
	OrderRow int64  `db:"order_row"`
	Name     string `db:"name"`
	Value    string `db:"value"`
}

func (r *orderRow) mirrored() *ordersync.MirroredOrder {
	o := ordersync.Order{
		OrderID:        ordersync.ID(r.OrderID),
		OrderCode:      r.OrderCode,
		OrderReference: r.OrderReference,
		Name:           r.Name,
		Description:    r.Description,
		OrderStatus:    ordersync.Status(r.Status),
		Subtotal:       r.Subtotal,
		TotalDetails: ordersync.Totals{
			ShippingAmount:  r.ShippingAmount,
			DiscountAmount:  r.DiscountAmount,
			SurchargeAmount: r.SurchargeAmount,
		},
		Total:          r.Total,
		PaymentLinkURL: r.PaymentLinkURL,
		SuccessURL:     r.SuccessURL,
		CancelURL:      r.CancelURL,
		Store: ordersync.StoreInfo{
			Name:           r.StoreName,
			CountryCode:    r.StoreCountryCode,
			CurrencyCode:   r.StoreCurrencyCode,
			CurrencySymbol: r.StoreCurrencySymbol,
			Locale:         r.StoreLocale,
			Timezone:       r.StoreTimezone,
		},
	}
	if r.CreatedAt != nil {
		o.Created = ordersync.Timestamp{Time: r.CreatedAt.UTC()}
	}
	if r.HasPayment {
		o.Payment = &ordersync.Payment{AuthorizationCode: r.AuthorizationCode, VoucherURL: r.VoucherURL}
		if b := (ordersync.Buyer{Name: r.BuyerName, Phone: r.BuyerPhone, Email: r.BuyerEmail}); b != (ordersync.Buyer{}) {
			o.Payment.Buyer = &b
		}
	}
	if r.Raw != nil {
		o.Raw = []byte(*r.Raw)
	}
	return &ordersync.MirroredOrder{
		Account: r.Account,
		Order:   o,
		Sync: ordersync.SyncInfo{
			FirstSeenAt:     r.FirstSeenAt.UTC(),
			LastSyncedAt:    utcPtr(r.LastSyncedAt),
			LastEventAt:     utcPtr(r.LastEventAt),
			LastEventType:   ordersync.EventType(r.LastEventType),
			FetchCount:      r.FetchCount,
			FetchSeq:        r.FetchSeq,
			PaidAt:          utcPtr(r.PaidAt),
			StatusChangedAt: utcPtr(r.StatusChangedAt),
		},
	}
}

// FindOrderByCode returns a fetched order with its raw document, line
// items, metadata and sync information. An order known only by a
// RecordOrderRef placeholder is not found: nothing was fetched yet.
func (db *DB) FindOrderByCode(ctx context.Context, account, orderCode string) (*ordersync.MirroredOrder, error) {
	var m *ordersync.MirroredOrder
	err := db.inReadTx(ctx, fmt.Sprintf("find order %s/%s", account, orderCode), func(tx *sqlx.Tx) error {
		var r orderRow
		if err := tx.GetContext(ctx, &r, db.rebind(`SELECT `+orderRowColumns+`, raw_document FROM orders
WHERE account = ? AND order_code = ? AND raw_document IS NOT NULL`), account, orderCode); err != nil {
			return err
		}
		m = r.mirrored()
		return db.loadDetails(ctx, tx, []int64{r.ID}, []*ordersync.MirroredOrder{m})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// LastFetches reads the last applied fetches of the account's orders
// codes and, from their status histories, their last status changes: one
// indexed read per lastFetchBatchMax codes, outside a transaction, since
// the pool reads them for every pull of webhooks. Orders never fetched are
// missing from the map.
func (db *DB) LastFetches(ctx context.Context, account string, codes []string) (map[string]ordersync.LastFetch, error) {
	op := fmt.Sprintf("read the last fetches of %d orders in %s", len(codes), account)
	out := make(map[string]ordersync.LastFetch, len(codes))
	for rest := codes; len(rest) > 0; {
		chunk := rest[:min(len(rest), lastFetchBatchMax)]
		rest = rest[len(chunk):]
		args, n := paddedArgs(account, chunk)
		query := `SELECT o.order_code, o.last_synced_at, o.status, h.at, h.cause FROM orders o
LEFT JOIN status_history h ON h.id = (SELECT MAX(id) FROM status_history WHERE order_row = o.id)
WHERE o.account = ? AND o.order_code IN (` + placeholders(n) + `) AND o.raw_document IS NOT NULL AND o.last_synced_at IS NOT NULL`
		var rows []struct {
			Code      string     `db:"order_code"`
			At        time.Time  `db:"last_synced_at"`
			Status    string     `db:"status"`
			ChangedAt *time.Time `db:"at"`
			Cause     *string    `db:"cause"`
		}
		if err := db.selectRead(ctx, &rows, query, args...); err != nil {
			return nil, translate(op, err)
		}
		for _, r := range rows {
			lf := ordersync.LastFetch{At: r.At, Status: ordersync.Status(r.Status)}
			if r.ChangedAt != nil && r.Cause != nil {
				lf.ChangedAt, lf.ChangeCause = *r.ChangedAt, ordersync.Cause(*r.Cause)
			}
			out[r.Code] = lf
		}
	}
	return out, nil
}

// lastFetchBatchMax bounds the codes of one LastFetches statement.
const lastFetchBatchMax = 512

// loadDetails fills the line items and metadata of orders, whose rows are
// rows (one to one).
func (db *DB) loadDetails(ctx context.Context, tx *sqlx.Tx, rows []int64, orders []*ordersync.MirroredOrder) error {
	if err := db.loadLineItems(ctx, tx, rows, orders); err != nil {
		return err
	}
	return db.loadMetadata(ctx, tx, rows, orders)
}

// loadLineItems fills the line items of orders, whose rows are rows (one
// to one), in their order, with one query: an export reads a thousand
// orders' lines at a time, and a query per few hundred orders cost it a
// round trip and a plan each.
func (db *DB) loadLineItems(ctx context.Context, tx *sqlx.Tx, rows []int64, orders []*ordersync.MirroredOrder) error {
	if len(rows) == 0 {
		return nil
	}
	byRow := make(map[int64]*ordersync.MirroredOrder, len(orders))
	for i, m := range orders {
		byRow[rows[i]] = m
	}
	in, arg := db.rowSet(rows)
	res, err := tx.QueryContext(ctx, db.rebind(`SELECT order_row, product_id, sku, name, price, promo_price, quantity, image_url, sub_total
FROM order_line_items WHERE `+in+` ORDER BY order_row, position`), arg)
	if err != nil {
		return fmt.Errorf("load line items: %w", err)
	}
	defer res.Close()
	for res.Next() {
		var (
			row       int64
			productID string
			it        ordersync.LineItem
		)
		if err := res.Scan(&row, &productID, &it.SKU, &it.Name, &it.Price, &it.PromoPrice, &it.Quantity, &it.ImageURL, &it.SubTotal); err != nil {
			return fmt.Errorf("load line items: %w", err)
		}
		it.ProductID = ordersync.ID(productID)
		m := byRow[row]
		m.Order.LineItems = append(m.Order.LineItems, it)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("load line items: %w", err)
	}
	return nil
}

// rowSet is a condition that order_row is one of rows, with its one
// argument: an array in PostgreSQL, a JSON array that json_each reads in
// SQLite. Either takes any number of rows as a single parameter.
func (db *DB) rowSet(rows []int64) (string, any) {
	if db.dialect == DialectPostgres {
		return "order_row = ANY(?)", rows
	}
	b := make([]byte, 0, len(rows)*8+2)
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r, 10)
	}
	return "order_row IN (SELECT value FROM json_each(?))", string(append(b, ']'))
}

// loadMetadata fills the metadata of orders, whose rows are rows (one to
// one), with one query per maxInParams orders.
func (db *DB) loadMetadata(ctx context.Context, tx *sqlx.Tx, rows []int64, orders []*ordersync.MirroredOrder) error {
	byRow := make(map[int64]*ordersync.MirroredOrder, len(orders))
	for i, m := range orders {
		byRow[rows[i]] = m
	}
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), maxInParams)]
		rows = rows[len(chunk):]
		args := make([]any, len(chunk))
		for i, r := range chunk {
			args[i] = r
		}
		var metadata []metadataRow
		if err := tx.SelectContext(ctx, &metadata, db.rebind(`SELECT order_row, name, value FROM order_metadata
WHERE order_row IN (`+placeholders(len(chunk))+`) ORDER BY order_row, position`), args...); err != nil {
			return fmt.Errorf("load metadata: %w", err)
		}
		for _, md := range metadata {
			m := byRow[md.OrderRow]
			m.Order.Metadata = append(m.Order.Metadata, ordersync.MetadataEntry{Name: md.Name, Value: md.Value})
		}
	}
	return nil
}

// StoreCurrency returns the currency code of the account's most recently
// recorded order that has one, or "" before any order was fetched. It reads
// one row from the newest end of the table, so a link's creation does not
// pay for the size of the mirror.
func (db *DB) StoreCurrency(ctx context.Context, account string) (string, error) {
	return db.newestStoreField(ctx, "read the store's currency", "store_currency_code", account)
}

// newestStoreField reads column (a store_* column of orders) of the
// account's most recently recorded order that has it set, or "" before any
// order has: one row from the newest end of the table.
func (db *DB) newestStoreField(ctx context.Context, op, column, account string) (string, error) {
	var value string
	err := db.inReadTx(ctx, op, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &value, db.rebind(`SELECT `+column+` FROM orders
WHERE account = ? AND `+column+` <> '' ORDER BY id DESC LIMIT 1`), account)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return value, err
}

// CountOrdersByStatus counts the mirror's orders per status; orders
// recorded but not fetched yet count under "". Every known status is
// present, with 0 when no order has it, so a gauge built on it drops to zero
// instead of keeping its last value. It reads only the status index, not the
// rows with their documents, which would cost about twenty times as much
// (BenchmarkCountOrdersByStatus).
func (db *DB) CountOrdersByStatus(ctx context.Context) (map[ordersync.Status]int, error) {
	counts := make(map[ordersync.Status]int, len(ordersync.Statuses))
	for _, s := range ordersync.Statuses {
		counts[s] = 0
	}
	err := db.inReadTx(ctx, "count orders by status", func(tx *sqlx.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT status, COUNT(*) FROM orders GROUP BY status`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				s string
				n int
			)
			if err := rows.Scan(&s, &n); err != nil {
				return err
			}
			counts[ordersync.Status(s)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

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
