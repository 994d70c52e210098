package store

import (
	"database/sql/driver"
	"reflect"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestOrderFieldsNameEachColumnOnce: a column named twice would make the
// upsert fail at run time on both dialects; catch it without a database.
func TestOrderFieldsNameEachColumnOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range orderFields {
		if seen[f.column] {
			t.Errorf("column %s declared twice", f.column)
		}
		seen[f.column] = true
	}
	if upsertOrders.cols != len(orderFields) || touchOrders.cols != len(touchFields) {
		t.Fatalf("statements take %d and %d columns, fields are %d and %d", upsertOrders.cols, touchOrders.cols, len(orderFields), len(touchFields))
	}
}

// TestTouchFieldsReadOnlyTheState: the bookkeeping of an unchanged order is
// written without its document, so none of its fields may read one.
func TestTouchFieldsReadOnlyTheState(t *testing.T) {
	synced := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	st := &orderState{FirstSeenAt: synced.Add(-time.Hour), FetchSeq: 7, FetchCount: 3, LastSyncedAt: &synced, LastEventType: "Updated"}
	got := (&orderWrite{key: orderKey{"acme", "yY7Mcnd"}, st: st}).values(touchFields)
	want := []any{"acme", "yY7Mcnd", synced.Add(-time.Hour), int64(7), int64(3), synced, nil, "Updated", nil}
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s = %v, want %v", touchFields[i].column, got[i], want[i])
		}
	}
}

// sameValue: a and b go into a column as the same value, as the driver
// takes them: the oracle the fields' own comparisons are checked with.
func sameValue(a, b any) bool {
	if x, ok := a.(ordersync.Amount); ok {
		if y, ok := b.(ordersync.Amount); ok {
			return x.String() == y.String()
		}
	}
	if v, ok := a.(driver.Valuer); ok {
		a, _ = v.Value()
	}
	if v, ok := b.(driver.Valuer); ok {
		b, _ = v.Value()
	}
	switch x := a.(type) {
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	}
	if a == nil || b == nil || !reflect.TypeOf(a).Comparable() {
		return a == nil && b == nil
	}
	return a == b
}

// TestOrderFieldsCompareAsWritten: each field's comparison of two rows
// agrees with a comparison of the values it writes, for rows that differ
// in one field of the document or the state at a time.
func TestOrderFieldsCompareAsWritten(t *testing.T) {
	a := ordersync.MustAmount
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	base := func() *orderWrite {
		o := &ordersync.Order{OrderID: "22805", OrderCode: "yY7Mcnd", OrderReference: "Ref-1", Name: "n", Description: "d",
			OrderStatus: ordersync.StatusPending, Subtotal: a("16.09"), Total: a("17.99"),
			TotalDetails: ordersync.Totals{ShippingAmount: a("2.00"), DiscountAmount: a("0.10"), SurchargeAmount: a("0")},
			Store:        ordersync.StoreInfo{Name: "s", CountryCode: "SV", CurrencyCode: "USD"},
			Created:      ordersync.Timestamp{Time: at},
			Payment:      &ordersync.Payment{AuthorizationCode: "A1", Buyer: &ordersync.Buyer{Name: "b", Phone: "7777-1234", Email: "B@x.com"}}}
		synced := at.Add(time.Minute)
		st := &orderState{FirstSeenAt: at, FetchSeq: 3, FetchCount: 2, LastSyncedAt: &synced, OrderID: "22805", OrderReference: "Ref-1"}
		return orderWriteOf(orderKey{"acme", "yY7Mcnd"}, st, o, []byte("{}"), "h1")
	}
	later := at.Add(time.Hour)
	edits := map[string]func(r *orderWrite){
		"none":             func(r *orderWrite) {},
		"status":           func(r *orderWrite) { r.o.OrderStatus = ordersync.StatusPaid },
		"total same text":  func(r *orderWrite) { r.o.Total = a("17.99") },
		"total 17.990":     func(r *orderWrite) { r.o.Total = a("17.990") },
		"total 18":         func(r *orderWrite) { r.o.Total = a("18") },
		"shipping":         func(r *orderWrite) { r.o.TotalDetails.ShippingAmount = a("2") },
		"currency":         func(r *orderWrite) { r.o.Store.CurrencyCode = "JPY" },
		"country":          func(r *orderWrite) { r.o.Store.CountryCode = "GT" },
		"created":          func(r *orderWrite) { r.o.Created = ordersync.Timestamp{} },
		"created moved":    func(r *orderWrite) { r.o.Created = ordersync.Timestamp{Time: later} },
		"created zone":     func(r *orderWrite) { r.o.Created = ordersync.Timestamp{Time: at.In(time.FixedZone("x", 3600))} },
		"reference case":   func(r *orderWrite) { r.o.OrderReference = "REF-1" },
		"email case":       func(r *orderWrite) { r.buyer.Email = "b@X.com" },
		"phone":            func(r *orderWrite) { r.buyer.Phone = "77771234" },
		"no payment":       func(r *orderWrite) { r.o.Payment, r.pay, r.buyer = nil, ordersync.Payment{}, ordersync.Buyer{} },
		"row's id":         func(r *orderWrite) { r.fromRow, r.st.OrderID = true, "" },
		"row's reference":  func(r *orderWrite) { r.fromRow, r.st.OrderReference = true, "x" },
		"synced":           func(r *orderWrite) { r.st.LastSyncedAt = &later },
		"synced same time": func(r *orderWrite) { s := *r.st.LastSyncedAt; r.st.LastSyncedAt = &s },
		"paid at":          func(r *orderWrite) { r.st.PaidAt = &later },
		"fetch seq":        func(r *orderWrite) { r.st.FetchSeq++ },
		"paid fired":       func(r *orderWrite) { r.st.PaidFired = true },
		"hash":             func(r *orderWrite) { r.hash = "h2" },
	}
	for name, edit := range edits {
		x, y := base(), base()
		st := *y.st
		y.st = &st
		o := *y.o
		y.o = &o
		edit(y)
		for _, f := range orderFields {
			want := sameValue(f.value(x), f.value(y))
			if f.column == "raw_document" {
				want = false // never compared: a changed order's document changed
			}
			if got := f.same(x, y); got != want {
				t.Errorf("%s: %s same = %v, written values %v and %v", name, f.column, got, f.value(x), f.value(y))
			}
		}
	}
}
