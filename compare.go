package ordersync

import (
	"fmt"
	"reflect"
	"strconv"
)

// DiffOrders compares two order details field by field and returns a line
// per difference, empty when they are the same. Amounts must match digit for
// digit ("6.50" differs from "6.5"): the mirror keeps money exactly as sent.
// Raw is not compared. Tests and internal/compare (the demo's and the chaos
// run's report) use it to hold the mirror against the service's truth.
func DiffOrders(want, got *Order) []string {
	var diffs []string
	diffValue("", reflect.ValueOf(*want), reflect.ValueOf(*got), func(path, format string, args ...any) {
		diffs = append(diffs, path+": "+fmt.Sprintf(format, args...))
	})
	return diffs
}

// ChangedFields names the fields of an order detail that differ from prev
// to next, as DiffOrders names them ("Payment.Buyer.Email",
// "LineItems[0].Price"), without their values: the mirror records which
// fields a fetch changed, and buyers' data must not be copied into that
// record. Empty when only what Order does not read changed.
//
// It runs on every fetch that changes an order, so it compares field by
// field in code rather than by reflection; TestChangedFieldsMatchesDiffOrders
// holds it to DiffOrders' names for every field Order has.
func ChangedFields(prev, next *Order) []string {
	var c changes
	c.str("OrderID", string(prev.OrderID), string(next.OrderID))
	c.str("OrderCode", prev.OrderCode, next.OrderCode)
	c.str("OrderReference", prev.OrderReference, next.OrderReference)
	c.str("Name", prev.Name, next.Name)
	c.str("Description", prev.Description, next.Description)
	if len(prev.LineItems) != len(next.LineItems) {
		c.add("LineItems")
	} else {
		for i := range prev.LineItems {
			c.lineItem(i, &prev.LineItems[i], &next.LineItems[i])
		}
	}
	c.str("OrderStatus", string(prev.OrderStatus), string(next.OrderStatus))
	c.amount("Subtotal", prev.Subtotal, next.Subtotal)
	c.amount("TotalDetails.ShippingAmount", prev.TotalDetails.ShippingAmount, next.TotalDetails.ShippingAmount)
	c.amount("TotalDetails.DiscountAmount", prev.TotalDetails.DiscountAmount, next.TotalDetails.DiscountAmount)
	c.amount("TotalDetails.SurchargeAmount", prev.TotalDetails.SurchargeAmount, next.TotalDetails.SurchargeAmount)
	c.amount("Total", prev.Total, next.Total)
	if len(prev.Metadata) != len(next.Metadata) {
		c.add("Metadata")
	} else {
		for i := range prev.Metadata {
			if a, b := prev.Metadata[i], next.Metadata[i]; a != b {
				at := indexed("Metadata", i)
				c.str(at+".Name", a.Name, b.Name)
				c.str(at+".Value", a.Value, b.Value)
			}
		}
	}
	c.str("PaymentLinkURL", prev.PaymentLinkURL, next.PaymentLinkURL)
	c.str("SuccessURL", prev.SuccessURL, next.SuccessURL)
	c.str("CancelURL", prev.CancelURL, next.CancelURL)
	ps, ns := &prev.Store, &next.Store
	c.str("Store.Name", ps.Name, ns.Name)
	c.str("Store.CountryCode", ps.CountryCode, ns.CountryCode)
	c.str("Store.CurrencyCode", ps.CurrencyCode, ns.CurrencyCode)
	c.str("Store.CurrencySymbol", ps.CurrencySymbol, ns.CurrencySymbol)
	c.str("Store.Locale", ps.Locale, ns.Locale)
	c.str("Store.Timezone", ps.Timezone, ns.Timezone)
	switch pp, np := prev.Payment, next.Payment; {
	case pp == nil && np == nil:
	case pp == nil || np == nil:
		c.add("Payment")
	default:
		c.str("Payment.AuthorizationCode", pp.AuthorizationCode, np.AuthorizationCode)
		c.str("Payment.VoucherURL", pp.VoucherURL, np.VoucherURL)
		switch pb, nb := pp.Buyer, np.Buyer; {
		case pb == nil && nb == nil:
		case pb == nil || nb == nil:
			c.add("Payment.Buyer")
		default:
			c.str("Payment.Buyer.Name", pb.Name, nb.Name)
			c.str("Payment.Buyer.Phone", pb.Phone, nb.Phone)
			c.str("Payment.Buyer.Email", pb.Email, nb.Email)
		}
	}
	if !prev.Created.Equal(next.Created.Time) {
		c.add("Created")
	}
	return c.fields
}

// changes collects ChangedFields' names.
type changes struct{ fields []string }

func (c *changes) add(path string) { c.fields = append(c.fields, path) }

func (c *changes) str(path, a, b string) {
	if a != b {
		c.add(path)
	}
}

func (c *changes) amount(path string, a, b Amount) {
	if !a.Identical(b) {
		c.add(path)
	}
}

func (c *changes) lineItem(i int, a, b *LineItem) {
	// The path is built only for a line that changed.
	var at string
	field := func(name string) {
		if at == "" {
			at = indexed("LineItems", i)
		}
		c.add(at + "." + name)
	}
	if a.ProductID != b.ProductID {
		field("ProductID")
	}
	if a.SKU != b.SKU {
		field("SKU")
	}
	if a.Name != b.Name {
		field("Name")
	}
	if !a.Price.Identical(b.Price) {
		field("Price")
	}
	switch {
	case a.PromoPrice == nil && b.PromoPrice == nil:
	case a.PromoPrice == nil || b.PromoPrice == nil || !a.PromoPrice.Identical(*b.PromoPrice):
		field("PromoPrice")
	}
	if a.Quantity != b.Quantity {
		field("Quantity")
	}
	if a.ImageURL != b.ImageURL {
		field("ImageURL")
	}
	if !a.SubTotal.Identical(b.SubTotal) {
		field("SubTotal")
	}
}

// indexed is path[i], as diffValue names a slice's entry.
func indexed(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// differ is told each difference diffValue finds: where, and what it is.
type differ func(path, format string, args ...any)

var (
	amountType = reflect.TypeOf(Amount{})
	rawType    = reflect.TypeOf(Order{}.Raw)
)

func diffValue(path string, a, b reflect.Value, diff differ) {
	if a.Type() == amountType {
		x, y := a.Interface().(Amount), b.Interface().(Amount)
		if !x.Identical(y) {
			diff(path, "want %s, got %s", x, y)
		}
		return
	}
	if ta, tb := a.Type(), b.Type(); ta == reflect.TypeOf(Timestamp{}) && tb == ta {
		x, y := a.Interface().(Timestamp), b.Interface().(Timestamp)
		if !x.Equal(y.Time) {
			diff(path, "want %s, got %s", x, y)
		}
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			f := a.Type().Field(i)
			if f.Type == rawType || !f.IsExported() {
				continue
			}
			diffValue(join(path, f.Name), a.Field(i), b.Field(i), diff)
		}
	case reflect.Pointer:
		switch {
		case a.IsNil() && b.IsNil():
		case a.IsNil() != b.IsNil():
			diff(path, "want %s, got %s", nilness(a), nilness(b))
		default:
			diffValue(path, a.Elem(), b.Elem(), diff)
		}
	case reflect.Slice:
		if a.Len() != b.Len() {
			diff(path, "want %d entries, got %d", a.Len(), b.Len())
			return
		}
		for i := 0; i < a.Len(); i++ {
			diffValue(indexed(path, i), a.Index(i), b.Index(i), diff)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			diff(path, "want %v, got %v", a.Interface(), b.Interface())
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func nilness(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	return "a value"
}
