package ordersync

import (
	"testing"
	"time"
)

func TestReversesPayment(t *testing.T) {
	cancelled := func(p *Payment) *Order { return &Order{OrderStatus: StatusCancelled, Payment: p} }
	for _, tc := range []struct {
		name              string
		next              *Order
		before, announced bool
		want              bool
	}{
		{"authorization code", cancelled(&Payment{AuthorizationCode: "204981"}), false, false, true},
		{"buyer's email", cancelled(&Payment{Buyer: &Buyer{Email: "a@example.com"}}), false, false, true},
		{"buyer's phone", cancelled(&Payment{Buyer: &Buyer{Phone: "+50370000000"}}), false, false, true},
		{"an earlier document's payment", cancelled(nil), true, false, true},
		{"a payment webhook", cancelled(nil), false, true, true},
		{"an empty payment", cancelled(&Payment{Buyer: &Buyer{}}), false, false, false},
		{"a voucher alone", cancelled(&Payment{VoucherURL: "https://pay.example.com/v"}), false, false, false},
		{"no evidence", cancelled(nil), false, false, false},
		{"not cancelled", &Order{OrderStatus: StatusPending, Payment: &Payment{AuthorizationCode: "1"}}, true, true, false},
		{"no document", nil, true, true, false},
	} {
		if got := ReversesPayment(tc.next, tc.before, tc.announced); got != tc.want {
			t.Errorf("%s: ReversesPayment = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPaymentState(t *testing.T) {
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status Status
		paid   *time.Time
		want   string
	}{
		{StatusPaid, &at, "collected"},
		{StatusFinalized, &at, "collected"},
		{StatusFinalized, nil, "collected"},
		{StatusCancelled, &at, "reversed"},
		{StatusCancelled, nil, ""},
		{StatusPending, nil, ""},
	} {
		if got := PaymentState(tc.status, tc.paid); got != tc.want {
			t.Errorf("PaymentState(%s, %v) = %q, want %q", tc.status, tc.paid, got, tc.want)
		}
	}
}
