package ordersync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
)

func TestParseAmount(t *testing.T) {
	tests := []struct{ in, want string }{
		{"12", "12"},
		{"6.50", "6.50"},
		{"6.5", "6.5"},
		{"-0.01", "-0.01"},
		{"  7.25\n", "7.25"},
		{"0", "0"},
		{"0.00", "0.00"},
		{"+3.10", "3.10"},
		{"1e2", "100"},
		{"1.5E+1", "15"},
		{"123456789012345678901234.123456789012345678", "123456789012345678901234.123456789012345678"},
		{"0.000000000000000001", "0.000000000000000001"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseAmount(tt.in)
			if err != nil {
				t.Fatalf("ParseAmount: %v", err)
			}
			if got := a.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseAmountRejects(t *testing.T) {
	for _, in := range []string{
		"", "   ", "abc", "NaN", "nan", "sNaN", "Inf", "-Inf", "Infinity", "-infinity",
		"1.2.3", "0x10", "1,50", "$5", "5 USD", "--1", "1e", "1e99999", "1e-99999",
		"1234567890123456789012345", // 25 digits before the point
		"0.0000000000000000001",     // 19 decimal places
		"0e30",
	} {
		t.Run(in, func(t *testing.T) {
			if a, err := ParseAmount(in); err == nil {
				t.Errorf("ParseAmount(%q) = %s, want an error", in, a)
			}
		})
	}
}

func TestMustAmountPanicsOnGarbage(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustAmount(\"garbage\") did not panic")
		}
	}()
	MustAmount("garbage")
}

func TestAmountJSONKeepsDigits(t *testing.T) {
	for _, s := range []string{"6.50", "0.10", "100", "-0.01", "0.00", "13.000", "99999999999999999999.99"} {
		t.Run(s, func(t *testing.T) {
			for _, doc := range []string{s, `"` + s + `"`, ` "` + s + `" `} {
				var a Amount
				if err := json.Unmarshal([]byte(doc), &a); err != nil {
					t.Fatalf("unmarshal %s: %v", doc, err)
				}
				if a.String() != s {
					t.Errorf("unmarshal %s = %s", doc, a)
				}
				out, err := json.Marshal(struct {
					Price Amount `json:"price"`
				}{a})
				if err != nil {
					t.Fatal(err)
				}
				if want := `{"price":` + s + `}`; string(out) != want {
					t.Errorf("marshal = %s, want %s", out, want)
				}
			}
		})
	}
}

func TestAmountUnmarshalJSON(t *testing.T) {
	tests := []struct {
		doc     string
		want    string // "" when it must fail
		wantNil bool   // into a *Amount
	}{
		{doc: `6.50`, want: "6.50"},
		{doc: `"6.50"`, want: "6.50"},
		{doc: `" 6.50 "`, want: "6.50"},
		{doc: `1.5e1`, want: "15"},
		{doc: `null`, want: "0", wantNil: true},
		{doc: `"NaN"`},
		{doc: `"Infinity"`},
		{doc: `"-Inf"`},
		{doc: `""`},
		{doc: `"seis"`},
		{doc: `true`},
		{doc: `{}`},
		{doc: `[6.5]`},
		{doc: `"6.50`},
		{doc: `1e400`},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			var a Amount
			err := json.Unmarshal([]byte(tt.doc), &a)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted %s as %s", tt.doc, a)
				}
				return
			}
			if err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if a.String() != tt.want {
				t.Errorf("= %s, want %s", a, tt.want)
			}
			var p struct {
				Promo *Amount `json:"promo"`
			}
			if err := json.Unmarshal([]byte(`{"promo":`+tt.doc+`}`), &p); err != nil {
				t.Fatal(err)
			}
			if (p.Promo == nil) != tt.wantNil {
				t.Errorf("*Amount nil = %v, want %v", p.Promo == nil, tt.wantNil)
			}
		})
	}
}

func TestAmountArithmeticIsExact(t *testing.T) {
	a := MustAmount
	tests := []struct {
		name string
		got  Amount
		want string // the digits
	}{
		{"0.1+0.2", a("0.1").Add(a("0.2")), "0.3"},
		{"6.50+6.50", a("6.50").Add(a("6.50")), "13.00"},
		{"6.50×2", a("6.50").MulInt(2), "13.00"},
		{"0.01×3", a("0.01").MulInt(3), "0.03"},
		{"1.10-1.00", a("1.10").Sub(a("1.00")), "0.10"},
		{"0.3-0.1-0.2", a("0.3").Sub(a("0.1")).Sub(a("0.2")), "0.0"},
		{"big", a("123456789012345678901234.99").MulInt(9223372036854775807), "1138687895536349070000742523276505651873886.93"},
		{"tiny", a("0.000000000000000001").Add(a("1000000000000000000000")), "1000000000000000000000.000000000000000001"},
		{"zero value", Amount{}.Add(a("2.5")), "2.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.String() != tt.want {
				t.Errorf("= %s, want %s", tt.got, tt.want)
			}
		})
	}

	var sum Amount
	for range 1000 {
		sum = sum.Add(a("0.01"))
	}
	if !sum.Equal(a("10")) || sum.String() != "10.00" {
		t.Errorf("1000 × 0.01 = %s", sum)
	}
}

func TestAmountCompare(t *testing.T) {
	a := MustAmount
	if !a("6.5").Equal(a("6.50")) || a("6.5").Identical(a("6.50")) {
		t.Error("6.5 and 6.50 must be equal but not identical")
	}
	// Identical is equality of the written texts, whatever the exponents.
	texts := []string{"6.5", "6.50", "-6.5", "650", "6.5e2", "65e1", "0", "0.00", "-0", "0e3", "1e3", "1000", "0.001", "1e-3", "17.99"}
	for _, x := range texts {
		for _, y := range texts {
			if got, want := a(x).Identical(a(y)), a(x).String() == a(y).String(); got != want {
				t.Errorf("%s.Identical(%s) = %v, want %v", x, y, got, want)
			}
		}
	}
	if a("6.49").Cmp(a("6.5")) != -1 || a("6.5").Cmp(a("6.49")) != 1 || a("6.5").Cmp(a("6.500")) != 0 {
		t.Error("Cmp")
	}
	if a("-0.01").Sign() != -1 || a("0.00").Sign() != 0 || a("0.01").Sign() != 1 {
		t.Error("Sign")
	}
	if !a("0.000").IsZero() || !(Amount{}).IsZero() || a("0.001").IsZero() {
		t.Error("IsZero")
	}
	if AmountFromInt(42).String() != "42" || (Amount{}).String() != "0" {
		t.Error("AmountFromInt / zero value")
	}
}

func TestAmountValueScan(t *testing.T) {
	v, err := MustAmount("6.50").Value()
	if err != nil || v != "6.50" {
		t.Fatalf("Value() = %#v, %v", v, err)
	}
	tests := []struct {
		src  any
		want string // "" when Scan must fail
	}{
		{"6.50", "6.50"},
		{[]byte("0.10"), "0.10"},
		{int64(7), "7"},
		{nil, "0"},
		{6.5, ""}, // a float column would already have lost the digits
		{"abc", ""},
		{"NaN", ""},
		{time.Now(), ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T %v", tt.src, tt.src), func(t *testing.T) {
			a := MustAmount("1")
			err := a.Scan(tt.src)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Scan accepted %#v as %s", tt.src, a)
				}
				return
			}
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if a.String() != tt.want {
				t.Errorf("= %s, want %s", a, tt.want)
			}
		})
	}
}

func BenchmarkAmountUnmarshalJSON(b *testing.B) {
	doc := []byte(`"123.45"`)
	b.ReportAllocs()
	for b.Loop() {
		var a Amount
		if err := a.UnmarshalJSON(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAmountZeroWithExponent: a zero with a positive exponent, parsed or
// computed, is written as a valid number (apd alone writes "0000"); the
// decode fuzzer found it.
func TestAmountZeroWithExponent(t *testing.T) {
	for _, a := range []Amount{MustAmount("0e3"), MustAmount("-0E+2"), MustAmount("1e3").Sub(MustAmount("1e3"))} {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal %v: %v", a, err)
		}
		var back Amount
		if err := json.Unmarshal(b, &back); err != nil || !back.IsZero() {
			t.Fatalf("%s does not round-trip as zero: %v", b, err)
		}
	}
}

// TestParseAmountPlainMatchesGeneral checks that ParseAmount's fast path
// gives the Decimal apd's parser gives, and leaves to it what it cannot.
func TestParseAmountPlainMatchesGeneral(t *testing.T) {
	for _, s := range []string{"0", "00", "0.00", "6.50", "-6.50", "17.990", "007", "-0.01", "123456789012345678", "1234567890.12345678",
		"-999999999999999999", "0.00000000000000001", "1", "-1", "2000.00"} {
		var plain, general apd.Decimal
		if !parsePlainAmount(s, &plain) {
			t.Errorf("%q: not parsed by the fast path", s)
			continue
		}
		if _, _, err := general.SetString(s); err != nil {
			t.Fatal(err)
		}
		if plain.Form != general.Form || plain.Negative != general.Negative || plain.Exponent != general.Exponent ||
			plain.Coeff.Cmp(&general.Coeff) != 0 || plain.String() != general.String() {
			t.Errorf("%q: fast path %s (exp %d), apd %s (exp %d)", s, plain.String(), plain.Exponent, general.String(), general.Exponent)
		}
	}
	for _, s := range []string{"", "-", ".5", "5.", "-0", "-0.00", "1e3", "+1", "1.2.3", "1234567890123456789", "1,5", " 1", "NaN", "--1"} {
		var d apd.Decimal
		if parsePlainAmount(s, &d) {
			t.Errorf("%q: taken by the fast path, want apd's parser to decide", s)
		}
	}
}

// TestAmountUnmarshalJSONAsParseAmount: UnmarshalJSON, called on bytes no
// decoder checked first too, gives what encoding/json's string and then
// ParseAmount give.
func TestAmountUnmarshalJSONAsParseAmount(t *testing.T) {
	for _, doc := range []string{`12`, `"12"`, `-0`, `"-0"`, `-1.50`, `"-1.50"`, `"\u0031"`, `" 1"`, `"1 "`, `""`, `"`,
		`"-"`, `-`, `"1."`, `1.`, `.5`, `".5"`, `"007"`, `007`, `1234567890123456789`, `"123456789012345678"`,
		`"\"1\""`, `"1"2"`, `"12`, `12"`, "\"1\xff\"", `1e2`, `"1E-2"`, `+1`, ` 3 `, `"1.2.3"`} {
		var want Amount
		s, err := doc, error(nil)
		if b := bytes.TrimSpace([]byte(doc)); len(b) > 0 && b[0] == '"' {
			err = json.Unmarshal(b, &s)
		}
		if err == nil {
			want, err = ParseAmount(s)
		}
		var got Amount
		gotErr := got.UnmarshalJSON([]byte(doc))
		if (gotErr != nil) != (err != nil) || !got.Identical(want) {
			t.Errorf("UnmarshalJSON(%s) = %s, %v; encoding/json and ParseAmount: %s, %v", doc, got, gotErr, want, err)
		}
	}
}
