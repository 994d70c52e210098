package ordersync

import (
	"strings"
	"testing"
	"time"
)

func TestDiffOrders(t *testing.T) {
	base := func() *Order {
		promo := MustAmount("5.00")
		return &Order{
			OrderID: "31547", OrderCode: "yY7Mcnd", OrderStatus: StatusPaid,
			LineItems: []LineItem{{ProductID: "9", Name: "Combo", Price: MustAmount("6.50"), PromoPrice: &promo, Quantity: 2, SubTotal: MustAmount("13.00")}},
			Subtotal:  MustAmount("13.00"), Total: MustAmount("13.00"),
			Metadata: []MetadataEntry{{Name: "a", Value: "b"}},
			Payment:  &Payment{AuthorizationCode: "204981", Buyer: &Buyer{Name: "José"}},
			Created:  Timestamp{time.Date(2026, 10, 10, 18, 2, 41, 553e6, time.UTC)},
			Raw:      []byte(`{"ignored":true}`),
		}
	}
	tests := []struct {
		name   string
		mutate func(o *Order)
		want   string // a substring of the only diff; "" means equal
		field  string // what ChangedFields names it
	}{
		{"identical", func(o *Order) { o.Raw = nil }, "", ""},
		{"status", func(o *Order) { o.OrderStatus = StatusPending }, "OrderStatus", "OrderStatus"},
		{"amount digits", func(o *Order) { o.Total = MustAmount("13.0") }, "Total: want 13.00, got 13.0", "Total"},
		{"item price", func(o *Order) { o.LineItems[0].Price = MustAmount("6.51") }, "LineItems[0].Price", "LineItems[0].Price"},
		{"promo nil", func(o *Order) { o.LineItems[0].PromoPrice = nil }, "LineItems[0].PromoPrice: want a value, got nil", "LineItems[0].PromoPrice"},
		{"item count", func(o *Order) { o.LineItems = nil }, "LineItems: want 1 entries, got 0", "LineItems"},
		{"buyer", func(o *Order) { o.Payment.Buyer.Name = "Jose" }, "Payment.Buyer.Name", "Payment.Buyer.Name"},
		{"payment nil", func(o *Order) { o.Payment = nil }, "Payment: want a value, got nil", "Payment"},
		{"created", func(o *Order) { o.Created = Timestamp{o.Created.Add(time.Millisecond)} }, "Created", "Created"},
		{"metadata", func(o *Order) { o.Metadata[0].Value = "c" }, "Metadata[0].Value", "Metadata[0].Value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := base()
			tc.mutate(got)
			diffs := DiffOrders(base(), got)
			// ChangedFields names the same differences, without values.
			fields := ChangedFields(base(), got)
			if tc.want == "" {
				if len(diffs) != 0 || len(fields) != 0 {
					t.Fatalf("want no diff, got %q and fields %q", diffs, fields)
				}
				return
			}
			if len(fields) != 1 || fields[0] != tc.field {
				t.Errorf("ChangedFields = %q, want [%q]", fields, tc.field)
			}
			if len(diffs) != 1 || !strings.Contains(diffs[0], tc.want) {
				t.Fatalf("want one diff containing %q, got %q", tc.want, diffs)
			}
		})
	}
}
