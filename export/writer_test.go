package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// paidOrder is an order as the mirror holds it, paid, in currency cur.
func paidOrder(code, cur string, total string, buyer ordersync.Buyer) ordersync.ExportedOrder {
	promo := ordersync.MustAmount("0.99")
	return ordersync.ExportedOrder{MirroredOrder: &ordersync.MirroredOrder{
		Account: "default",
		Order: ordersync.Order{
			OrderID: "22805", OrderCode: code, OrderReference: "ref-" + code, Name: "Pedido",
			OrderStatus: ordersync.StatusPaid, Subtotal: ordersync.MustAmount(total), Total: ordersync.MustAmount(total),
			Store:   ordersync.StoreInfo{CurrencyCode: cur, Timezone: "America/El_Salvador"},
			Created: ordersync.Timestamp{Time: time.Date(2026, 10, 10, 18, 0, 12, 345e6, time.UTC)},
			Payment: &ordersync.Payment{AuthorizationCode: "204981", Buyer: &buyer},
			LineItems: []ordersync.LineItem{
				{ProductID: "884213", SKU: "COMBO", Name: "Combo", Price: ordersync.MustAmount("6.5"), Quantity: 2, SubTotal: ordersync.MustAmount("13")},
				{ProductID: "884220", SKU: "SODA", Name: "Soda", Price: ordersync.MustAmount("1.25"), PromoPrice: &promo, Quantity: 1, SubTotal: promo},
			},
		},
	}, StatusChanges: []ordersync.StatusChange{
		{StatusTransition: ordersync.StatusTransition{To: ordersync.StatusPending}, At: time.Date(2026, 10, 10, 18, 0, 13, 0, time.UTC), Cause: ordersync.CauseCreate},
		{StatusTransition: ordersync.StatusTransition{From: ordersync.StatusPending, To: ordersync.StatusPaid}, At: time.Date(2026, 10, 10, 18, 5, 0, 0, time.UTC), Cause: ordersync.CauseWebhook},
	}}
}

func write(t *testing.T, opts Options, batch ...ordersync.ExportedOrder) string {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func readCSV(t *testing.T, s string, comma rune) [][]string {
	t.Helper()
	r := csv.NewReader(strings.NewReader(s))
	r.Comma = comma
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("read CSV: %v\n%s", err, s)
	}
	return recs
}

// The header rows are a contract: columns are only appended. These goldens
// change only by adding at the end.
func TestColumnsGolden(t *testing.T) {
	golden := map[Kind]string{
		Orders: "order_code,order_id,order_reference,status,currency,subtotal,total,created_at,created_at_utc,paid_at,paid_at_utc," +
			"status_changed_at,buyer_name,buyer_email,buyer_phone,authorization_code,status_changed_at_utc,account,order_name," +
			"shipping_amount,discount_amount,surcharge_amount,payment_state",
		OrderLines: "order_code,order_reference,status,currency,line_number,product_id,sku,name,quantity,price,promo_price," +
			"line_subtotal,created_at,created_at_utc,account",
		StatusChanges: "order_code,from_status,to_status,at,at_utc,cause,order_reference,account",
	}
	for _, k := range Kinds {
		out := write(t, Options{Kind: k})
		if first, _, _ := strings.Cut(out, "\n"); first != golden[k] {
			t.Errorf("%s header:\n got %s\nwant %s", k, first, golden[k])
		}
	}
}

func TestOrderRow(t *testing.T) {
	loc, err := time.LoadLocation("America/El_Salvador")
	if err != nil {
		t.Fatal(err)
	}
	o := paidOrder("yY7Mcnd", "USD", "15.9", ordersync.Buyer{Name: "José Peña", Email: "jose@example.com", Phone: "+50370001234"})
	paid := time.Date(2026, 10, 10, 18, 4, 59, 123456e3, time.UTC)
	changed := time.Date(2026, 10, 10, 18, 5, 0, 0, time.UTC)
	o.Sync.PaidAt, o.Sync.StatusChangedAt = &paid, &changed
	recs := readCSV(t, write(t, Options{Kind: Orders, Location: loc}, o), ',')
	row := map[string]string{}
	for i, name := range recs[0] {
		row[name] = recs[1][i]
	}
	want := map[string]string{
		"order_code": "yY7Mcnd", "order_id": "22805", "status": "PAID", "currency": "USD", "total": "15.90", "subtotal": "15.90",
		"created_at": "2026-10-10T12:00:12.345-06:00", "created_at_utc": "2026-10-10T18:00:12.345Z",
		"buyer_name": "José Peña", "buyer_phone": "+50370001234", "authorization_code": "204981",
		"paid_at": "2026-10-10T12:04:59.123456-06:00", "paid_at_utc": "2026-10-10T18:04:59.123456Z",
		"status_changed_at": "2026-10-10T12:05:00-06:00", "status_changed_at_utc": "2026-10-10T18:05:00Z",
		"account": "default", "shipping_amount": "0.00",
	}
	for k, v := range want {
		if row[k] != v {
			t.Errorf("%s = %q, want %q", k, row[k], v)
		}
	}
}

// An order not known to be paid has no paid time: its cells are empty.
func TestUnpaidOrderRow(t *testing.T) {
	o := paidOrder("p", "USD", "1", ordersync.Buyer{})
	o.Order.OrderStatus, o.Order.Payment = ordersync.StatusPending, nil
	recs := readCSV(t, write(t, Options{Kind: Orders}, o), ',')
	for _, name := range []string{"paid_at", "paid_at_utc", "status_changed_at", "status_changed_at_utc", "buyer_name", "authorization_code"} {
		if got := recs[1][slices.Index(recs[0], name)]; got != "" {
			t.Errorf("%s = %q, want empty", name, got)
		}
	}
}

// Amounts are exact and have the currency's minor units, never rounded.
func TestAmountText(t *testing.T) {
	for _, c := range []struct{ amount, cur, want string }{
		{"6.5", "USD", "6.50"}, {"13", "USD", "13.00"}, {"0.10", "USD", "0.10"}, {"6.500", "USD", "6.50"},
		{"1.2", "KWD", "1.200"}, {"1.2345", "KWD", "1.2345"}, {"500", "JPY", "500"}, {"500.0", "JPY", "500"},
		{"0.015", "USD", "0.015"}, {"-0.5", "USD", "-0.50"}, {"12345678901234567890.1", "USD", "12345678901234567890.10"},
		{"6.5", "XXX", "6.5"}, {"6.5", "", "6.5"},
	} {
		if got := amountText(ordersync.MustAmount(c.amount), c.cur); got != c.want {
			t.Errorf("amountText(%s %s) = %s, want %s", c.amount, c.cur, got, c.want)
		}
	}
	// Ten orders of 0.10 in the file sum to 1.00 exactly.
	batch := make([]ordersync.ExportedOrder, 10)
	for i := range batch {
		batch[i] = paidOrder("c", "USD", "0.1", ordersync.Buyer{})
	}
	recs := readCSV(t, write(t, Options{Kind: Orders}, batch...), ',')
	sum := ordersync.AmountFromInt(0)
	for _, r := range recs[1:] {
		sum = sum.Add(ordersync.MustAmount(r[slices.Index(recs[0], "total")]))
	}
	if sum.String() != "1.00" {
		t.Errorf("ten totals of 0.10 sum to %s", sum)
	}
}

// Every formula-leading character is neutralised in the Excel profile, in
// every text column, and none is altered in the plain profile.
func TestExcelProfileFormulaCells(t *testing.T) {
	for _, lead := range []string{"=", "+", "-", "@", "\t", "\r"} {
		value := lead + "HYPERLINK(\"http://x\")"
		o := paidOrder(value, "USD", "1", ordersync.Buyer{Name: value, Email: value, Phone: value})
		o.Order.OrderReference, o.Order.Payment.AuthorizationCode = value, value
		o.Order.LineItems[0].SKU, o.Order.LineItems[0].Name = value, value
		for _, k := range Kinds {
			plain := readCSV(t, write(t, Options{Kind: k}, o), ',')
			excel := write(t, Options{Kind: k, Profile: Excel}, o)
			if !strings.HasPrefix(excel, "\uFEFF") {
				t.Fatalf("%s: the Excel profile has no byte-order mark", k)
			}
			excelRecs := readCSV(t, strings.TrimPrefix(excel, "\uFEFF"), ',')
			for i, name := range plain[0] {
				if !strings.HasPrefix(excelRecs[0][i], name) {
					t.Fatalf("%s: the Excel header's column %d is %q, not %s", k, i, excelRecs[0][i], name)
				}
			}
			seen := 0
			for r := 1; r < len(plain); r++ {
				for i, name := range plain[0] {
					p, x := plain[r][i], excelRecs[r][i]
					if strings.HasPrefix(p, lead) && strings.Contains(p, "HYPERLINK") {
						seen++
						if p != value {
							t.Errorf("%s %s: plain profile altered %q to %q", k, name, value, p)
						}
						if x != "'"+value {
							t.Errorf("%s %s: Excel profile wrote %q, want %q", k, name, x, "'"+value)
						}
					} else if _, err := time.Parse(time.RFC3339Nano, p); err == nil {
						// Times have their own test (TestExcelProfileTimes).
					} else if p != x && !(x == "'"+p) {
						t.Errorf("%s %s: profiles differ on a harmless cell: %q vs %q", k, name, p, x)
					}
				}
			}
			if seen == 0 {
				t.Errorf("%s: no text cell carried the %q value", k, lead)
			}
		}
	}
	// A negative amount is a number, not a formula: it stays as it is.
	o := paidOrder("c", "USD", "-5", ordersync.Buyer{})
	recs := readCSV(t, strings.TrimPrefix(write(t, Options{Kind: Orders, Profile: Excel}, o), "\uFEFF"), ',')
	if got := recs[1][slices.Index(recs[0], "total")]; got != "-5.00" {
		t.Errorf("negative total in the Excel profile = %q", got)
	}
}

func TestDecimalCommaAndSemicolon(t *testing.T) {
	o := paidOrder("c", "USD", "1234.5", ordersync.Buyer{Name: "Peña; José"})
	out := write(t, Options{Kind: OrderLines, Delimiter: ';', DecimalComma: true}, o)
	if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "order_code;order_reference;status;currency;") {
		t.Fatalf("header with ';': %s", first)
	}
	recs := readCSV(t, out, ';')
	col := func(r int, name string) string { return recs[r][slices.Index(recs[0], name)] }
	if col(1, "price") != "6,50" || col(1, "line_subtotal") != "13,00" || col(2, "promo_price") != "0,99" || col(1, "quantity") != "2" {
		t.Errorf("decimal comma: %v", recs[1:])
	}
	recs = readCSV(t, write(t, Options{Kind: Orders, Delimiter: ';', DecimalComma: true}, o), ';')
	if got := recs[1][slices.Index(recs[0], "total")]; got != "1234,50" {
		t.Errorf("total with a decimal comma = %q", got)
	}
	if got := recs[1][slices.Index(recs[0], "buyer_name")]; got != "Peña; José" {
		t.Errorf("a cell holding the delimiter = %q", got)
	}
}

// A JSON Lines object has the CSV's columns as keys, in order, and the
// CSV's cells as values.
func TestJSONLMatchesCSV(t *testing.T) {
	o := paidOrder("yY7Mcnd", "USD", "15.9", ordersync.Buyer{Name: "José", Phone: "+50370001234"})
	for _, k := range Kinds {
		recs := readCSV(t, write(t, Options{Kind: k}, o), ',')
		dec := json.NewDecoder(strings.NewReader(write(t, Options{Kind: k, Format: JSONL}, o)))
		n := 0
		for {
			var keys []string
			vals := map[string]string{}
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || tok != json.Delim('{') {
				t.Fatalf("%s: line %d does not open an object: %v %v", k, n+1, tok, err)
			}
			for dec.More() {
				kt, _ := dec.Token()
				var v string
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("%s: value of %v is not a string: %v", k, kt, err)
				}
				keys, vals[kt.(string)] = append(keys, kt.(string)), v
			}
			dec.Token()
			n++
			if !slices.Equal(keys, recs[0]) {
				t.Errorf("%s: keys %v, want the CSV's columns %v", k, keys, recs[0])
			}
			for i, name := range recs[0] {
				if vals[name] != recs[n][i] {
					t.Errorf("%s row %d %s: JSONL %q, CSV %q", k, n, name, vals[name], recs[n][i])
				}
			}
		}
		if n != len(recs)-1 {
			t.Errorf("%s: %d JSON lines for %d CSV rows", k, n, len(recs)-1)
		}
	}
}

func TestParseSettings(t *testing.T) {
	opts, err := ParseSettings(Settings{Kind: "order-lines", Profile: "excel", Delimiter: ";", Decimal: "comma"})
	if err != nil || opts.Kind != OrderLines || opts.Format != CSV || opts.Profile != Excel || opts.Delimiter != ';' || !opts.DecimalComma {
		t.Fatalf("ParseSettings = %+v, %v", opts, err)
	}
	for _, c := range []struct {
		s     Settings
		field string
	}{
		{Settings{Kind: "invoices"}, "kind"},
		{Settings{Kind: "orders", Format: "xlsx"}, "format"},
		{Settings{Kind: "orders", Profile: "lotus"}, "profile"},
		{Settings{Kind: "orders", Delimiter: "|"}, "delimiter"},
		{Settings{Kind: "orders", Decimal: "dot"}, "decimal"},
		{Settings{Kind: "orders", Format: "jsonl", Profile: "excel"}, "profile"},
		{Settings{Kind: "orders", Format: "jsonl", Decimal: "comma"}, "decimal"},
	} {
		_, err := ParseSettings(c.s)
		var ve *ordersync.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields[c.field]) == 0 {
			t.Errorf("ParseSettings(%+v) = %v, want a validation error naming %s", c.s, err, c.field)
		}
	}
}

// KeepText neutralises formulas as FormulaSafe does, and keeps as text
// an identifier or phone number a spreadsheet would read as a number or
// a date; any other value is as it is.
func TestKeepText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"=HYPERLINK(\"http://x\",\"pay\")", "'=HYPERLINK(\"http://x\",\"pay\")"},
		{"+503 7365 7811", "'+503 7365 7811"},
		{"-204981", "'-204981"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"73657811", "'73657811"},
		{"7365-7811", "'7365-7811"},
		{"(503) 7365.7811", "'(503) 7365.7811"},
		{"00123", "'00123"},
		{"1E5", "'1E5"},
		{"2026/11/26", "'2026/11/26"},
		{"12:30", "'12:30"},
		{"A7X9Q2", "A7X9Q2"},
		{"ref-s1", "ref-s1"},
		{"E5", "E5"},
		{"COMBO", "COMBO"},
	} {
		if got := KeepText(tc.in); got != tc.want {
			t.Errorf("KeepText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A name or email is text a spreadsheet keeps: only formulas change.
	if got := FormulaSafe("73657811"); got != "73657811" {
		t.Errorf("FormulaSafe(73657811) = %q", got)
	}
}

// In the Excel profile the identifiers and the phone are kept as text,
// names only formula-safe, and times are written as a spreadsheet reads a
// date and time, in the export's zone or UTC, the header naming the zone
// with the offsets it takes over the export's days.
func TestExcelProfileTimes(t *testing.T) {
	o := paidOrder("00123", "EUR", "1", ordersync.Buyer{Name: "2026", Email: "b@example.com", Phone: "73657811"})
	madrid, err := ordersync.ParseZone("Europe/Madrid")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Kind: Orders, Profile: Excel, Location: madrid,
		ZoneFrom: time.Date(2026, 10, 20, 0, 0, 0, 0, madrid), ZoneTo: time.Date(2026, 11, 1, 0, 0, 0, 0, madrid)}
	recs := readCSV(t, strings.TrimPrefix(write(t, opts, o), "\uFEFF"), ',')
	cell := func(name string) string {
		t.Helper()
		i := slices.Index(recs[0], name)
		if i < 0 {
			t.Fatalf("no column %q in %q", name, recs[0])
		}
		return recs[1][i]
	}
	for name, want := range map[string]string{
		"created_at (Europe/Madrid, UTC+02:00, UTC+01:00)": "2026-10-10 20:00:12",
		"created_at_utc (UTC)":                             "2026-10-10 18:00:12",
		"paid_at (Europe/Madrid, UTC+02:00, UTC+01:00)":    "",
		"status_changed_at_utc (UTC)":                      "",
		"order_code":                                       "'00123",
		"order_id":                                         "'22805",
		"authorization_code":                               "'204981",
		"buyer_phone":                                      "'73657811",
		"buyer_name":                                       "2026",
		"total":                                            "1.00",
	} {
		if got := cell(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := time.ParseInLocation(SpreadsheetTime, cell("created_at_utc (UTC)"), time.UTC); err != nil {
		t.Errorf("the UTC time is not in the spreadsheet form: %v", err)
	}

	// Without days, the header names the offset the zone has now; in UTC,
	// the local columns say UTC.
	_, off := time.Now().In(madrid).Zone()
	recs = readCSV(t, strings.TrimPrefix(write(t, Options{Kind: StatusChanges, Profile: Excel, Location: madrid}, o), "\uFEFF"), ',')
	if want := "at (Europe/Madrid, " + ordersync.UTCOffset(off) + ")"; recs[0][3] != want || recs[1][3] != "2026-10-10 20:00:13" {
		t.Errorf("status changes: header %q, first time %q; want %q and 2026-10-10 20:00:13", recs[0][3], recs[1][3], want)
	}
	recs = readCSV(t, strings.TrimPrefix(write(t, Options{Kind: OrderLines, Profile: Excel}, o), "\uFEFF"), ',')
	if i := slices.Index(recs[0], "created_at (UTC)"); i < 0 || recs[1][i] != "2026-10-10 18:00:12" {
		t.Errorf("order lines in UTC: header %q, row %q", recs[0], recs[1])
	}
	// The plain profile is untouched: RFC 3339, names alone, text as is.
	plain := readCSV(t, write(t, Options{Kind: Orders, Location: madrid}, o), ',')
	if plain[0][7] != "created_at" || plain[1][7] != "2026-10-10T20:00:12.345+02:00" || plain[1][14] != "73657811" {
		t.Errorf("plain profile: %q / %q", plain[0][7], plain[1])
	}
}
