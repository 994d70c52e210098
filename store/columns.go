package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
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
