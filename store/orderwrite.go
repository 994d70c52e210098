package store

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// orderWrite is what one row of orders is written from: the order's key and
// state and, when its document changed, the document.
type orderWrite struct {
	key   orderKey
	st    *orderState
	o     *ordersync.Order // nil when only the bookkeeping is written
	doc   []byte
	hash  string
	pay   ordersync.Payment
	buyer ordersync.Buyer
	// fromRow: order_id and order_reference are the row's (st's), which
	// RecordOrderRef may have filled where the document had none.
	fromRow bool
}

// orderField is one column of the orders table, how its value is taken
// from the row and when two rows hold the same value in it: declared
// together, so a column cannot drift from its value. same compares the
// values as they go into the column without boxing them, which a status
// change's comparison of every column would cost twice per column.
type orderField struct {
	column string
	value  func(r *orderWrite) any
	same   func(a, b *orderWrite) bool
}

// field is a column whose value is get's, compared with ==.
func field[T comparable](column string, get func(r *orderWrite) T) orderField {
	return orderField{column, func(r *orderWrite) any { return get(r) }, func(a, b *orderWrite) bool { return get(a) == get(b) }}
}

// amountField is an amount's column, written as its text.
func amountField(column string, get func(r *orderWrite) ordersync.Amount) orderField {
	return orderField{column, func(r *orderWrite) any { return get(r) }, func(a, b *orderWrite) bool { return get(a).Identical(get(b)) }}
}

// minorField is an amount's column of minor units (minorAmount).
func minorField(column string, get func(r *orderWrite) ordersync.Amount) orderField {
	return orderField{column, func(r *orderWrite) any { return minorAmount(get(r), r.o.Store.CurrencyCode) },
		func(a, b *orderWrite) bool {
			if get(a).Identical(get(b)) && a.o.Store.CurrencyCode == b.o.Store.CurrencyCode {
				return true
			}
			x, xok := ordersync.MinorAmount(get(a), a.o.Store.CurrencyCode)
			y, yok := ordersync.MinorAmount(get(b), b.o.Store.CurrencyCode)
			return xok == yok && (!xok || x == y)
		}}
}

// timeField is a nullable time's column.
func timeField(column string, get func(r *orderWrite) *time.Time) orderField {
	return orderField{column, func(r *orderWrite) any { return nullTimePtr(get(r)) }, func(a, b *orderWrite) bool {
		x, y := get(a), get(b)
		return x == nil && y == nil || x != nil && y != nil && dbTime(*x).Equal(dbTime(*y))
	}}
}

// keyField is a column of a key derived by key from text that sameText
// compares: the same text has the same key, computed only where the texts
// differ.
func keyField(column string, sameText func(a, b *orderWrite) bool, key func(r *orderWrite) string) orderField {
	return orderField{column, func(r *orderWrite) any { return key(r) }, func(a, b *orderWrite) bool {
		return sameText(a, b) || key(a) == key(b)
	}}
}

// orderFields are the columns of a fully written order.
var orderFields = []orderField{
	field("account", func(r *orderWrite) string { return r.key.account }),
	field("order_code", func(r *orderWrite) string { return r.key.code }),
	field("order_id", func(r *orderWrite) string {
		if r.fromRow {
			return r.st.OrderID
		}
		return string(r.o.OrderID)
	}),
	field("order_reference", func(r *orderWrite) string {
		if r.fromRow {
			return r.st.OrderReference
		}
		return r.o.OrderReference
	}),
	field("name", func(r *orderWrite) string { return r.o.Name }),
	field("description", func(r *orderWrite) string { return r.o.Description }),
	field("status", func(r *orderWrite) string { return string(r.o.OrderStatus) }),
	amountField("subtotal", func(r *orderWrite) ordersync.Amount { return r.o.Subtotal }),
	amountField("shipping_amount", func(r *orderWrite) ordersync.Amount { return r.o.TotalDetails.ShippingAmount }),
	amountField("discount_amount", func(r *orderWrite) ordersync.Amount { return r.o.TotalDetails.DiscountAmount }),
	amountField("surcharge_amount", func(r *orderWrite) ordersync.Amount { return r.o.TotalDetails.SurchargeAmount }),
	amountField("total", func(r *orderWrite) ordersync.Amount { return r.o.Total }),
	field("payment_link_url", func(r *orderWrite) string { return r.o.PaymentLinkURL }),
	field("success_url", func(r *orderWrite) string { return r.o.SuccessURL }),
	field("cancel_url", func(r *orderWrite) string { return r.o.CancelURL }),
	timeField("created_at", func(r *orderWrite) *time.Time {
		if r.o.Created.IsZero() {
			return nil
		}
		return &r.o.Created.Time
	}),
	field("store_name", func(r *orderWrite) string { return r.o.Store.Name }),
	field("store_country_code", func(r *orderWrite) string { return r.o.Store.CountryCode }),
	field("store_currency_code", func(r *orderWrite) string { return r.o.Store.CurrencyCode }),
	field("store_currency_symbol", func(r *orderWrite) string { return r.o.Store.CurrencySymbol }),
	field("store_locale", func(r *orderWrite) string { return r.o.Store.Locale }),
	field("store_timezone", func(r *orderWrite) string { return r.o.Store.Timezone }),
	field("has_payment", func(r *orderWrite) bool { return r.o.Payment != nil }),
	field("payment_authorization_code", func(r *orderWrite) string { return r.pay.AuthorizationCode }),
	field("payment_voucher_url", func(r *orderWrite) string { return r.pay.VoucherURL }),
	field("buyer_name", func(r *orderWrite) string { return r.buyer.Name }),
	field("buyer_phone", func(r *orderWrite) string { return r.buyer.Phone }),
	field("buyer_email", func(r *orderWrite) string { return r.buyer.Email }),
	// A changed order's document changed, as its hash did: its text is
	// written without comparing it, which the apply does not keep.
	{"raw_document", func(r *orderWrite) any { return string(r.doc) }, func(_, _ *orderWrite) bool { return false }},
	field("document_hash", func(r *orderWrite) string { return r.hash }),
	timeField("first_seen_at", func(r *orderWrite) *time.Time { return &r.st.FirstSeenAt }),
	timeField("last_synced_at", func(r *orderWrite) *time.Time { return r.st.LastSyncedAt }),
	timeField("last_event_at", func(r *orderWrite) *time.Time { return r.st.LastEventAt }),
	field("last_event_type", func(r *orderWrite) string { return r.st.LastEventType }),
	field("fetch_count", func(r *orderWrite) int64 { return r.st.FetchCount }),
	field("fetch_seq", func(r *orderWrite) int64 { return r.st.FetchSeq }),
	field("paid_fired", func(r *orderWrite) bool { return r.st.PaidFired }),
	field("status_transitions", func(r *orderWrite) int64 { return r.st.Transitions }),
	timeField("changed_at", func(r *orderWrite) *time.Time { return r.st.ChangedAt }),
	timeField("next_check_at", func(r *orderWrite) *time.Time { return r.st.NextCheckAt }),
	timeField("paid_at", func(r *orderWrite) *time.Time { return r.st.PaidAt }),
	timeField("status_changed_at", func(r *orderWrite) *time.Time { return r.st.StatusChangedAt }),
	{"total_key", func(r *orderWrite) any { return totalKey(r.o.Total) },
		func(a, b *orderWrite) bool {
			return a.o.Total.Identical(b.o.Total) || totalKey(a.o.Total) == totalKey(b.o.Total)
		}},
	keyField("buyer_email_key", func(a, b *orderWrite) bool { return a.buyer.Email == b.buyer.Email },
		func(r *orderWrite) string { return ordersync.IdentifierKey(r.buyer.Email) }),
	keyField("buyer_phone_key", func(a, b *orderWrite) bool {
		return a.buyer.Phone == b.buyer.Phone && a.o.Store.CountryCode == b.o.Store.CountryCode
	}, func(r *orderWrite) string { return ordersync.PhoneKey(r.buyer.Phone, r.o.Store.CountryCode) }),
	keyField("order_reference_key", func(a, b *orderWrite) bool { return a.o.OrderReference == b.o.OrderReference },
		func(r *orderWrite) string { return ordersync.IdentifierKey(r.o.OrderReference) }),
	field("minor_units", func(r *orderWrite) int { return ordersync.MinorScale(r.o.Store.CurrencyCode) }),
	minorField("subtotal_minor", func(r *orderWrite) ordersync.Amount { return r.o.Subtotal }),
	minorField("shipping_amount_minor", func(r *orderWrite) ordersync.Amount { return r.o.TotalDetails.ShippingAmount }),
	minorField("discount_amount_minor", func(r *orderWrite) ordersync.Amount { return r.o.TotalDetails.DiscountAmount }),
	minorField("surcharge_amount_minor", func(r *orderWrite) ordersync.Amount { return r.o.TotalDetails.SurchargeAmount }),
	minorField("total_minor", func(r *orderWrite) ordersync.Amount { return r.o.Total }),
}

// touchFields are the sync bookkeeping of an order whose document did not
// change: they read the state only.
var touchFields = pickOrderFields("account", "order_code", "first_seen_at", "fetch_seq", "fetch_count",
	"last_synced_at", "last_event_at", "last_event_type", "next_check_at")

// pickOrderFields are the named orderFields, in the order given.
func pickOrderFields(columns ...string) []orderField {
	picked := make([]orderField, len(columns))
	for i, c := range columns {
		j := slices.IndexFunc(orderFields, func(f orderField) bool { return f.column == c })
		if j < 0 {
			panic("store: no order field " + c)
		}
		picked[i] = orderFields[j]
	}
	return picked
}

// values are the row's values of fields, in their order.
func (r *orderWrite) values(fields []orderField) []any {
	vals := make([]any, len(fields))
	for i, f := range fields {
		vals[i] = f.value(r)
	}
	return vals
}

// upsertOrderFields inserts rows of fields and, on conflict, sets every
// one but the key and first_seen_at (and so keeps expires_at too), which
// belong to ordersync, not to the document.
func upsertOrderFields(fields []orderField, returning string) rowsSQL {
	columns := make([]string, len(fields))
	var set []string
	for i, f := range fields {
		columns[i] = f.column
		if !keepsOnUpdate(f.column) {
			set = append(set, f.column+" = excluded."+f.column)
		}
	}
	return rowsSQL{
		prefix: "INSERT INTO orders (" + strings.Join(columns, ", ") + ") VALUES ",
		cols:   len(fields),
		suffix: " ON CONFLICT (account, order_code) DO UPDATE SET " + strings.Join(set, ", ") + returning,
	}
}

// keepsOnUpdate: an update of an existing row never sets the column, so
// an update's statement names it only for the insert it never makes.
func keepsOnUpdate(column string) bool {
	return column == "account" || column == "order_code" || column == "first_seen_at"
}

// changedOrderFields is the set of orderFields (bit i for orderFields[i])
// whose values in next differ from those in prev, the key and
// first_seen_at left out.
func changedOrderFields(prev, next *orderWrite) uint64 {
	var mask uint64
	for i, f := range orderFields {
		if !keepsOnUpdate(f.column) && !f.same(prev, next) {
			mask |= 1 << i
		}
	}
	return mask
}

// partialOrder is the update of the fields of one mask of
// changedOrderFields: the fields' indexes in orderFields, the key and
// first_seen_at first.
type partialOrder struct {
	index []int
	sql   rowsSQL
}

// row is the partial update's values of r: only the changed fields' are
// taken (and boxed).
func (p partialOrder) row(r *orderWrite) []any {
	row := make([]any, len(p.index))
	for j, i := range p.index {
		row[j] = orderFields[i].value(r)
	}
	return row
}

// partialOrders caches partialOrder by mask: a batch's updates come in
// a few shapes (a status change, a payment), each built once.
var partialOrders sync.Map // uint64 → partialOrder

func partialOrderFields(mask uint64) partialOrder {
	if p, ok := partialOrders.Load(mask); ok {
		return p.(partialOrder)
	}
	var index []int
	for i, f := range orderFields {
		if keepsOnUpdate(f.column) {
			index = append(index, i)
		}
	}
	for i := range orderFields {
		if mask&(1<<i) != 0 {
			index = append(index, i)
		}
	}
	fields := make([]orderField, len(index))
	for j, i := range index {
		fields[j] = orderFields[i]
	}
	p, _ := partialOrders.LoadOrStore(mask, partialOrder{index: index, sql: upsertOrderFields(fields, "")})
	return p.(partialOrder)
}

func init() {
	if len(orderFields) > 64 {
		panic("store: more orderFields than changedOrderFields has bits")
	}
}

// storedWrite is the row of an order fetched before the batch, as it
// holds it. The columns are functions of the document and the state (a
// migration that adds one fills it for the orders stored before it), so
// they are those of its stored document and state as read, but for the two
// that RecordOrderRef fills where the document had none.
func storedWrite(k orderKey, bo *batchOrder) *orderWrite {
	r := orderWriteOf(k, &bo.stored, bo.storedOrder, nil, bo.stored.Hash)
	r.fromRow = true
	return r
}

func orderWriteOf(k orderKey, st *orderState, o *ordersync.Order, doc []byte, hash string) *orderWrite {
	r := &orderWrite{key: k, st: st, o: o, doc: doc, hash: hash}
	if r.o.Payment != nil {
		r.pay = *r.o.Payment
	}
	if r.pay.Buyer != nil {
		r.buyer = *r.pay.Buyer
	}
	return r
}

func nullTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return dbTime(*t)
}
