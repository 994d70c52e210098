package ordersync

import (
	"errors"
	"testing"
)

func TestDecimalPlaces(t *testing.T) {
	for in, want := range map[string]int{"10": 0, "10.5": 1, "10.50": 1, "10.999": 3, "0.001": 3, "1e2": 0, "100.000000000000000001": 18} {
		if got := MustAmount(in).DecimalPlaces(); got != want {
			t.Errorf("%s has %d decimal places, want %d", in, got, want)
		}
	}
}

// TestValidateFor: amounts are held to the store currency's minor units,
// and to MaxMinorUnits while the currency is not known.
func TestValidateFor(t *testing.T) {
	amount := func(s string) PaymentLinkParams { a := MustAmount(s); return PaymentLinkParams{Amount: &a} }
	item := func(price string) PaymentLinkParams {
		p := MustAmount(price)
		return PaymentLinkParams{LineItems: []LineItemParams{{Product: &ProductParams{Name: "x", Price: &p}, Quantity: 1}}}
	}
	tests := []struct {
		name     string
		params   PaymentLinkParams
		currency string
		field    string // the refused field, or "" for none
		message  string
	}{
		{"USD cents", amount("10.99"), "USD", "", ""},
		{"USD trailing zero", amount("10.990"), "usd", "", ""},
		{"USD a typo", amount("10.999"), "USD", "amount", "The amount has more decimal places than USD allows (2)."},
		{"JPY whole yen", amount("1500"), "JPY", "", ""},
		{"JPY a fraction", amount("1500.5"), "JPY", "amount", "The amount has more decimal places than JPY allows (0)."},
		{"BHD fils", amount("1.234"), "BHD", "", ""},
		{"a line item's price", item("6.505"), "USD", "lineItems[0].product.price", "The amount has more decimal places than USD allows (2)."},
		{"unknown currency, 3 places", amount("10.999"), "", "", ""},
		{"unknown currency, 18 places", amount("10.999999999999999999"), "", "amount", "The amount has more decimal places than any currency allows (3)."},
		{"a currency not listed", amount("10.9999"), "XYZ", "amount", "The amount has more decimal places than any currency allows (3)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.params.ValidateFor(English, tt.currency)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Fields[tt.field]) != 1 || ve.Fields[tt.field][0] != tt.message {
				t.Fatalf("got %v, want %s: %q", err, tt.field, tt.message)
			}
		})
	}
	// The interface's own rules still apply, in the same error.
	p := amount("-1.999")
	var ve *ValidationError
	if err := p.ValidateFor(Spanish, "USD"); !errors.As(err, &ve) || len(ve.Fields["amount"]) != 2 {
		t.Fatalf("a negative amount with a typo: %v, want both messages on amount", err)
	}
}

// TestMinorAmount: exact integers of minor units, or none.
func TestMinorAmount(t *testing.T) {
	tests := []struct {
		amount, currency string
		want             int64
		ok               bool
	}{
		{"17.99", "USD", 1799, true},
		{"6.5", "USD", 650, true},
		{"0.10", "usd", 10, true},
		{"10", "USD", 1000, true},
		{"10.000", "USD", 1000, true},
		{"-0.01", "USD", -1, true},
		{"1.5", "KWD", 1500, true},
		{"0.125", "KWD", 125, true},
		{"1500", "JPY", 1500, true},
		{"1e3", "JPY", 1000, true},
		{"0", "CLP", 0, true},
		{"1.234", "XXX", 1234, true}, // not known: MaxMinorUnits
		{"10.999", "USD", 0, false},
		{"0.5", "JPY", 0, false},
		{"1.2345", "XXX", 0, false},
		{"92233720368547758.07", "USD", 9223372036854775807, true},
		{"92233720368547758.08", "USD", 0, false},
		{"-92233720368547758.08", "USD", -9223372036854775808, true},
		{"999999999999999999999999", "USD", 0, false},
	}
	for _, tt := range tests {
		got, ok := MinorAmount(MustAmount(tt.amount), tt.currency)
		if got != tt.want || ok != tt.ok {
			t.Errorf("MinorAmount(%s %s) = %d, %v; want %d, %v", tt.amount, tt.currency, got, ok, tt.want, tt.ok)
		}
	}
}
