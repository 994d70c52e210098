package ordersync

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIDUnmarshalJSON(t *testing.T) {
	tests := []struct {
		doc     string
		want    ID
		wantErr bool
	}{
		{doc: `31547`, want: "31547"},
		{doc: `"31547"`, want: "31547"},
		{doc: `" 31547 "`, want: "31547"},
		{doc: `"ord_9f"`, want: "ord_9f"},
		{doc: `null`, want: ""},
		{doc: `""`, want: ""},
		{doc: `18446744073709551616`, want: "18446744073709551616"},
		{doc: `-12`, want: "-12"},
		{doc: `0`, want: "0"},
		{doc: `1.50`, want: "1.50"},
		{doc: `1e3`, want: "1e3"},
		{doc: `"\u0033\u0031547"`, want: "31547"},
		{doc: `"caf\u00e9 \"x\""`, want: `café "x"`},
		{doc: `"café"`, want: "café"},
		{doc: `true`, wantErr: true},
		{doc: `{}`, wantErr: true},
		{doc: `[1]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			var v struct {
				ID ID `json:"orderId"`
			}
			err := json.Unmarshal([]byte(`{"orderId":`+tt.doc+`}`), &v)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("accepted %s as %q", tt.doc, v.ID)
				}
				return
			}
			if err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if v.ID != tt.want {
				t.Errorf("= %q, want %q", v.ID, tt.want)
			}
		})
	}
}

// TestIDAndTimestampDecodeAsEncodingJSON: the tokens the decoders take
// without encoding/json (strings without escapes, integers) come out as
// encoding/json would decode them, and what they pass on to it (escapes,
// invalid UTF-8, control characters, numbers JSON does not allow) too,
// also when UnmarshalJSON is called on bytes no decoder checked first.
func TestIDAndTimestampDecodeAsEncodingJSON(t *testing.T) {
	for _, doc := range []string{`"31547"`, `"a\u0062c"`, "\"\xff\xfe\"", "\"tab\there\"", `"q\"uote"`, `"é"`,
		`12`, `-3`, `007`, `-`, `--1`, `1.0`, `0x10`, `"2026-10-10T18:01:12.345Z"`, `"2026-10-10T18:01:12.345\u005a"`, `"`, `"unterminated`} {
		var want string
		wantErr := json.Unmarshal([]byte(doc), &want) != nil
		if wantErr && !strings.HasPrefix(doc, `"`) {
			var n json.Number
			if json.Unmarshal([]byte(doc), &n) == nil {
				want, wantErr = n.String(), false
			}
		}
		var id ID
		err := id.UnmarshalJSON([]byte(doc))
		if (err != nil) != wantErr || (err == nil && string(id) != strings.TrimSpace(want)) {
			t.Errorf("ID from %q = %q, %v; encoding/json: %q, error %v", doc, id, err, want, wantErr)
		}
		if !strings.HasPrefix(doc, `"`) {
			continue
		}
		var ts Timestamp
		err = ts.UnmarshalJSON([]byte(doc))
		wantTS, parseErr := ParseTimestamp(want)
		if wantErr || want == "" {
			parseErr = nil
		}
		if (err != nil) != (wantErr || parseErr != nil) || (err == nil && !wantErr && want != "" && !ts.Equal(wantTS.Time)) {
			t.Errorf("Timestamp from %q = %v, %v; encoding/json then ParseTimestamp: %v, %v", doc, ts, err, wantTS, wantErr || parseErr != nil)
		}
	}
}

func TestIDMarshalJSON(t *testing.T) {
	tests := []struct {
		id   ID
		want string
	}{
		{"31547", `31547`},
		{"0", `0`},
		{"", `null`},
		{"ord_9f", `"ord_9f"`},
		{"007", `"007"`}, // not a JSON number
		{"-5", `"-5"`},
		{"18446744073709551616", `"18446744073709551616"`},
	}
	for _, tt := range tests {
		t.Run(string(tt.id), func(t *testing.T) {
			out, err := json.Marshal(tt.id)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(out) != tt.want {
				t.Errorf("= %s, want %s", out, tt.want)
			}
			var back ID
			if err := json.Unmarshal(out, &back); err != nil || back != tt.id {
				t.Errorf("round trip = %q, %v", back, err)
			}
		})
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-10-10T18:01:12.345Z", time.Date(2026, 10, 10, 18, 1, 12, 345e6, time.UTC)},
		{"2026-10-10T18:01:12Z", time.Date(2026, 10, 10, 18, 1, 12, 0, time.UTC)},
		{"2026-10-10T18:02:41.5531207", time.Date(2026, 10, 10, 18, 2, 41, 553120700, time.UTC)},
		{"2026-10-10T18:01:12", time.Date(2026, 10, 10, 18, 1, 12, 0, time.UTC)},
		{"2026-10-10T12:01:12.345-06:00", time.Date(2026, 10, 10, 18, 1, 12, 345e6, time.UTC)},
		{"2026-10-10 18:01:12", time.Date(2026, 10, 10, 18, 1, 12, 0, time.UTC)},
		{"2026-10-10 18:01:12+00:00", time.Date(2026, 10, 10, 18, 1, 12, 0, time.UTC)},
		{" 2026-10-10T18:01:12Z ", time.Date(2026, 10, 10, 18, 1, 12, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ts, err := ParseTimestamp(tt.in)
			if err != nil {
				t.Fatalf("ParseTimestamp: %v", err)
			}
			if !ts.Equal(tt.want) || ts.Location() != time.UTC {
				t.Errorf("= %s, want %s", ts.Time, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01T00:00:00Z", "2026-10-10", "10/10/2026 18:01", "1760119272", "9999-12-31T23:59:59-01:00"} {
		if ts, err := ParseTimestamp(bad); err == nil {
			t.Errorf("ParseTimestamp(%q) = %s, want an error", bad, ts)
		}
	}
}

func TestTimestampJSON(t *testing.T) {
	ts := Timestamp{time.Date(2026, 10, 10, 12, 1, 12, 345678e3, time.FixedZone("CST", -6*3600))}
	out, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `"2026-10-10T18:01:12.345Z"` {
		t.Errorf("marshal = %s: want UTC, milliseconds and Z", out)
	}
	if out, _ := json.Marshal(Timestamp{}); string(out) != "null" {
		t.Errorf("zero marshals as %s", out)
	}
	if (Timestamp{}).String() != "" {
		t.Errorf("zero String() = %q", Timestamp{}.String())
	}
	for doc, wantZero := range map[string]bool{`null`: true, `""`: true, `"2026-10-10T18:01:12Z"`: false} {
		var got Timestamp
		if err := json.Unmarshal([]byte(doc), &got); err != nil {
			t.Errorf("unmarshal %s: %v", doc, err)
		} else if got.IsZero() != wantZero {
			t.Errorf("unmarshal %s: zero = %v", doc, got.IsZero())
		}
	}
	for _, doc := range []string{`1760119272`, `"ayer"`, `{}`, `true`} {
		var got Timestamp
		if err := json.Unmarshal([]byte(doc), &got); err == nil {
			t.Errorf("unmarshal %s accepted as %s", doc, got)
		}
	}
}

func readTestdata(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return b
}

func TestDecodeOrderFixtures(t *testing.T) {
	tests := []struct {
		file      string
		status    Status
		total     string
		promo     string
		paid      bool
		lineTotal string // Σ price × quantity, or promo price when set
	}{
		{"paid.json", StatusPaid, "14.25", "", true, "14.25"},
		{"promo-price.json", StatusPending, "13.23", "5.99", false, "13.23"},
		{"totals-strings.json", StatusPending, "14.25", "", false, "14.25"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc := readTestdata(t, filepath.Join("orders", tt.file))
			o, err := DecodeOrder(doc)
			if err != nil {
				t.Fatalf("DecodeOrder: %v", err)
			}
			if o.OrderID != "31547" || o.OrderCode != "yY7Mcnd" || o.OrderStatus != tt.status {
				t.Errorf("order %q %q %q", o.OrderID, o.OrderCode, o.OrderStatus)
			}
			if o.Total.String() != tt.total || !o.Total.Equal(o.Subtotal) {
				t.Errorf("total %s subtotal %s, want %s", o.Total, o.Subtotal, tt.total)
			}
			var sum Amount
			for _, it := range o.LineItems {
				price := it.Price
				if it.PromoPrice != nil {
					price = *it.PromoPrice
				}
				if !it.SubTotal.Equal(price.MulInt(int64(it.Quantity))) {
					t.Errorf("line %s: subTotal %s ≠ %s × %d", it.Name, it.SubTotal, price, it.Quantity)
				}
				sum = sum.Add(it.SubTotal)
			}
			if !sum.Equal(MustAmount(tt.lineTotal)) {
				t.Errorf("Σ subTotal = %s", sum)
			}
			if got := o.LineItems[0].PromoPrice; (got == nil) != (tt.promo == "") || (got != nil && got.String() != tt.promo) {
				t.Errorf("promoPrice = %v, want %q", got, tt.promo)
			}
			if (o.Payment != nil) != tt.paid {
				t.Errorf("payment = %+v", o.Payment)
			}
			if !bytes.Equal(o.Raw, doc) {
				t.Error("Raw is not the document")
			}
		})
	}
}

func TestDecodeOrderTolerance(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		check   func(t *testing.T, o *Order)
		wantErr bool
	}{
		{name: "payment null", doc: `{"orderCode":"a","payment":null}`, check: noPayment},
		{name: "payment {}", doc: `{"orderCode":"a","payment":{}}`, check: noPayment},
		{name: "payment with empty buyer", doc: `{"orderCode":"a","payment":{"authorizationCode":"","buyer":{}}}`, check: noPayment},
		{name: "payment missing", doc: `{"orderCode":"a"}`, check: noPayment},
		{name: "payment set", doc: `{"orderCode":"a","payment":{"authorizationCode":"204981"}}`, check: func(t *testing.T, o *Order) {
			if o.Payment == nil || o.Payment.AuthorizationCode != "204981" {
				t.Errorf("payment = %+v", o.Payment)
			}
		}},
		{name: "lower-case status", doc: `{"orderCode":"a","orderStatus":"paid"}`, check: func(t *testing.T, o *Order) {
			if o.OrderStatus != StatusPaid {
				t.Errorf("status = %q", o.OrderStatus)
			}
		}},
		{name: "orderId number", doc: `{"orderId":31547}`, check: func(t *testing.T, o *Order) {
			if o.OrderID != "31547" {
				t.Errorf("orderId = %q", o.OrderID)
			}
		}},
		{name: "orderId string", doc: `{"orderId":"31547"}`, check: func(t *testing.T, o *Order) {
			if o.OrderID != "31547" {
				t.Errorf("orderId = %q", o.OrderID)
			}
		}},
		{name: "unknown fields ignored", doc: `{"orderCode":"a","shiny":{"new":[1,2]},"lineItems":[{"name":"x","extra":true}]}`, check: func(t *testing.T, o *Order) {
			if o.OrderCode != "a" || len(o.LineItems) != 1 || !bytes.Contains(o.Raw, []byte("shiny")) {
				t.Errorf("order = %+v", o)
			}
		}},
		{name: "null everywhere", doc: `{"orderCode":"a","lineItems":null,"metadata":null,"store":null,"total":null,"created":null,"totalDetails":null}`, check: func(t *testing.T, o *Order) {
			if !o.Total.IsZero() || !o.Created.IsZero() {
				t.Errorf("order = %+v", o)
			}
		}},
		{name: "null", doc: `null`, wantErr: true},
		{name: "array", doc: `[]`, wantErr: true},
		{name: "empty", doc: ``, wantErr: true},
		{name: "HTML", doc: `<html>502</html>`, wantErr: true},
		{name: "total not a number", doc: `{"total":"catorce"}`, wantErr: true},
		{name: "total NaN", doc: `{"total":"NaN"}`, wantErr: true},
		{name: "created not a time", doc: `{"created":"ayer"}`, wantErr: true},
		{name: "truncated", doc: `{"orderCode":"a",`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := DecodeOrder([]byte(tt.doc))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("accepted %s", tt.doc)
				}
				if !strings.HasPrefix(err.Error(), "decode order detail") && !strings.Contains(err.Error(), "amount") && !strings.Contains(err.Error(), "timestamp") {
					t.Errorf("error %q does not say what was being done", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeOrder: %v", err)
			}
			tt.check(t, o)
		})
	}
}

func noPayment(t *testing.T, o *Order) {
	t.Helper()
	if o.Payment != nil {
		t.Errorf("payment = %+v, want nil", o.Payment)
	}
}

// FuzzDecodeOrder: any input either fails cleanly or gives an order that
// keeps its raw bytes and survives a marshal/decode round trip.
func FuzzDecodeOrder(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "orders"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readTestdata(f, filepath.Join("orders", e.Name())))
	}
	for _, s := range []string{`null`, `{}`, `{"orderId":"007","payment":{}}`, `{"total":"1e2","created":"2026-10-10T18:01:12"}`, `{"lineItems":[{"promoPrice":null}]}`, `{"created":"9999-12-31T23:59:59-01:00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		o, err := DecodeOrder(doc)
		if err != nil {
			return
		}
		if !bytes.Equal(o.Raw, doc) {
			t.Fatal("Raw is not the input")
		}
		if o.Payment != nil && o.Payment.IsEmpty() {
			t.Fatal("an empty payment was kept")
		}
		out, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("marshal decoded order: %v", err)
		}
		back, err := DecodeOrder(out)
		if err != nil {
			t.Fatalf("decode re-marshalled order %s: %v", out, err)
		}
		if back.OrderID != o.OrderID || back.OrderCode != o.OrderCode || back.OrderStatus != o.OrderStatus ||
			!back.Total.Identical(o.Total) || len(back.LineItems) != len(o.LineItems) || (back.Payment == nil) != (o.Payment == nil) {
			t.Fatalf("round trip changed the order: %s", out)
		}
	})
}

// BenchmarkDecodeOrder decodes a paid order's detail, as the worker does
// for every fetch.
func BenchmarkDecodeOrder(b *testing.B) {
	doc := readTestdata(b, filepath.Join("orders", "paid.json"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeOrder(doc); err != nil {
			b.Fatal(err)
		}
	}
}
