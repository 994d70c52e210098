package export

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// cellKind says how a column's values are written.
type cellKind int

const (
	text    cellKind = iota // as mirrored; made formula-safe in the Excel profile
	ident                   // an identifier or phone number: text, kept text in the Excel profile
	amount                  // an exact decimal with the currency's minor units
	when                    // a time in the export's zone; "" when there is no such time
	whenUTC                 // the same time in UTC
	number                  // a whole number written by ordersync
)

// column is one column of a kind: its name and how it is written.
type column struct {
	name string
	kind cellKind
}

// The columns of each kind, in their order. Columns are only ever
// appended: a reader may rely on the position of every column here.
var columns = map[Kind][]column{
	Orders: {
		{"order_code", ident}, {"order_id", ident}, {"order_reference", ident}, {"status", text}, {"currency", text},
		{"subtotal", amount}, {"total", amount}, {"created_at", when}, {"created_at_utc", whenUTC},
		{"paid_at", when}, {"paid_at_utc", whenUTC}, {"status_changed_at", when},
		{"buyer_name", text}, {"buyer_email", text}, {"buyer_phone", ident}, {"authorization_code", ident},
		{"status_changed_at_utc", whenUTC}, {"account", text}, {"order_name", text},
		{"shipping_amount", amount}, {"discount_amount", amount}, {"surcharge_amount", amount},
		{"payment_state", text},
	},
	OrderLines: {
		{"order_code", ident}, {"order_reference", ident}, {"status", text}, {"currency", text},
		{"line_number", number}, {"product_id", ident}, {"sku", ident}, {"name", text}, {"quantity", number},
		{"price", amount}, {"promo_price", amount}, {"line_subtotal", amount},
		{"created_at", when}, {"created_at_utc", whenUTC}, {"account", text},
	},
	StatusChanges: {
		{"order_code", ident}, {"from_status", text}, {"to_status", text}, {"at", when}, {"at_utc", whenUTC}, {"cause", text},
		{"order_reference", ident}, {"account", text},
	},
}

// Columns returns the names of a kind's columns, in order: the CSV's header
// row and each JSON Lines object's keys.
func Columns(kind Kind) []string {
	cols := columns[kind]
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names
}

// Writer writes export rows. Nothing reaches the underlying writer before
// Flush (or a buffer's worth of rows).
type Writer struct {
	opts    Options
	cols    []column
	bw      *bufio.Writer
	csv     *csv.Writer
	started bool
	rows    int
	cells   []string // one row's cells, reused
}

// NewWriter returns a writer of opts.Kind rows to w.
func NewWriter(w io.Writer, opts Options) (*Writer, error) {
	cols, ok := columns[opts.Kind]
	if !ok {
		return nil, fmt.Errorf("export: unknown kind %q", opts.Kind)
	}
	if opts.Format == "" {
		opts.Format = CSV
	}
	if opts.Delimiter == 0 {
		opts.Delimiter = ','
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	ew := &Writer{opts: opts, cols: cols, bw: bufio.NewWriterSize(w, 64<<10), cells: make([]string, len(cols))}
	if opts.Format == CSV {
		ew.csv = csv.NewWriter(ew.bw)
		ew.csv.Comma = opts.Delimiter
	}
	return ew, nil
}

// Rows is how many rows were written, the header not counted.
func (ew *Writer) Rows() int { return ew.rows }

// start writes what comes before the rows: the byte-order mark of the
// Excel profile and the CSV's header row.
func (ew *Writer) start() error {
	if ew.started {
		return nil
	}
	ew.started = true
	if ew.opts.Format != CSV {
		return nil
	}
	if ew.opts.Profile == Excel {
		if _, err := ew.bw.WriteString("\uFEFF"); err != nil {
			return err
		}
	}
	return ew.csv.Write(ew.header())
}

// header is the CSV's header row: the column names, and in the Excel
// profile each time column's zone after its name
// ("created_at (Europe/Madrid, UTC+01:00)", "created_at_utc (UTC)"), as its
// cells carry no offset.
func (ew *Writer) header() []string {
	names := Columns(ew.opts.Kind)
	if ew.opts.Profile != Excel {
		return names
	}
	loc := ew.opts.Location
	zone := "UTC"
	if loc != time.UTC {
		from, to := ew.opts.ZoneFrom, ew.opts.ZoneTo
		if from.IsZero() || to.IsZero() {
			from = time.Now()
			to = from
		}
		zone = loc.String() + ", " + strings.Join(ordersync.ZoneOffsets(loc, from, to), ", ")
	}
	for i, c := range ew.cols {
		switch c.kind {
		case when:
			names[i] += " (" + zone + ")"
		case whenUTC:
			names[i] += " (UTC)"
		}
	}
	return names
}

// Write writes the rows of a batch of orders.
func (ew *Writer) Write(batch []ordersync.ExportedOrder) error {
	if err := ew.start(); err != nil {
		return err
	}
	for i := range batch {
		if err := ew.order(&batch[i]); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes what is buffered through to the underlying writer (the
// header row too, when no row came).
func (ew *Writer) Flush() error {
	if err := ew.start(); err != nil {
		return err
	}
	if ew.csv != nil {
		ew.csv.Flush()
		if err := ew.csv.Error(); err != nil {
			return err
		}
	}
	return ew.bw.Flush()
}

// order writes the rows of one order for the writer's kind. The fields of
// the order it reads are the ones Run asks the mirror for
// (ordersync.ExportOrderFields, ExportRepeatedFields): a column that reads
// another needs it added there, or TestExportFieldsWriteTheSameFile fails.
func (ew *Writer) order(e *ordersync.ExportedOrder) error {
	o := &e.Order
	cur := o.Store.CurrencyCode
	switch ew.opts.Kind {
	case Orders:
		var buyer ordersync.Buyer
		var auth string
		if o.Payment != nil {
			auth = o.Payment.AuthorizationCode
			if o.Payment.Buyer != nil {
				buyer = *o.Payment.Buyer
			}
		}
		paid, changed := timeOf(e.Sync.PaidAt), timeOf(e.Sync.StatusChangedAt)
		return ew.row(o.OrderCode, string(o.OrderID), o.OrderReference, string(o.OrderStatus), cur,
			amountText(o.Subtotal, cur), amountText(o.Total, cur),
			ew.local(o.Created.Time), ew.utc(o.Created.Time), ew.local(paid), ew.utc(paid), ew.local(changed),
			buyer.Name, buyer.Email, buyer.Phone, auth,
			ew.utc(changed), e.Account, o.Name,
			amountText(o.TotalDetails.ShippingAmount, cur), amountText(o.TotalDetails.DiscountAmount, cur),
			amountText(o.TotalDetails.SurchargeAmount, cur),
			ordersync.PaymentState(o.OrderStatus, e.Sync.PaidAt))
	case OrderLines:
		// Every line of an order repeats its creation time: written once.
		created, createdUTC := ew.local(o.Created.Time), ew.utc(o.Created.Time)
		for i, it := range o.LineItems {
			promo := ""
			if it.PromoPrice != nil {
				promo = amountText(*it.PromoPrice, cur)
			}
			if err := ew.row(o.OrderCode, o.OrderReference, string(o.OrderStatus), cur,
				strconv.Itoa(i+1), string(it.ProductID), it.SKU, it.Name, strconv.Itoa(it.Quantity),
				amountText(it.Price, cur), promo, amountText(it.SubTotal, cur),
				created, createdUTC, e.Account); err != nil {
				return err
			}
		}
	case StatusChanges:
		for _, c := range e.StatusChanges {
			if err := ew.row(o.OrderCode, string(c.From), string(c.To), ew.local(c.At), ew.utc(c.At), string(c.Cause),
				o.OrderReference, e.Account); err != nil {
				return err
			}
		}
	}
	return nil
}

// row writes one row: cells in the kind's column order, as the profile
// and options want them.
func (ew *Writer) row(cells ...string) error {
	if len(cells) != len(ew.cols) {
		return fmt.Errorf("export %s: a row of %d cells for %d columns", ew.opts.Kind, len(cells), len(ew.cols))
	}
	for i, c := range ew.cols {
		v := cells[i]
		switch {
		case c.kind == text && ew.opts.Profile == Excel:
			v = FormulaSafe(v)
		case c.kind == ident && ew.opts.Profile == Excel:
			v = KeepText(v)
		case c.kind == amount && ew.opts.DecimalComma:
			v = strings.Replace(v, ".", ",", 1)
		}
		ew.cells[i] = v
	}
	ew.rows++
	if ew.csv != nil {
		return ew.csv.Write(ew.cells)
	}
	return ew.jsonLine()
}

// jsonLine writes the row as one JSON object, keys in column order.
func (ew *Writer) jsonLine() error {
	ew.bw.WriteByte('{')
	for i, c := range ew.cols {
		if i > 0 {
			ew.bw.WriteByte(',')
		}
		k, _ := json.Marshal(c.name)
		v, err := json.Marshal(ew.cells[i])
		if err != nil {
			return err
		}
		ew.bw.Write(k)
		ew.bw.WriteByte(':')
		ew.bw.Write(v)
	}
	_, err := ew.bw.WriteString("}\n")
	return err
}

// local writes t in the export's zone; "" for no time.
func (ew *Writer) local(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if ew.opts.Profile == Excel {
		return t.In(ew.opts.Location).Format(SpreadsheetTime)
	}
	return t.In(ew.opts.Location).Format(time.RFC3339Nano)
}

// SpreadsheetTime is how the Excel profile writes a time: a form every
// spreadsheet reads as a date and time, without an offset (which none
// reads); the column's header names the zone.
const SpreadsheetTime = "2006-01-02 15:04:05"

// timeOf is a time the mirror may not have; zero when it has none.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// utc writes t in UTC; "" for no time.
func (ew *Writer) utc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if ew.opts.Profile == Excel {
		return t.UTC().Format(SpreadsheetTime)
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// amountText writes an amount with the currency's minor units: 6.5 USD is
// "6.50", 5 JPY "5", 1.2 KWD "1.200". It never rounds: an amount with more
// significant decimals than its currency has keeps them, and one in a
// currency not known keeps the digits it was mirrored with.
func amountText(a ordersync.Amount, currency string) string {
	s := a.String()
	places, ok := ordersync.MinorUnits(currency)
	if !ok {
		return s
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	if len(frac) < places {
		frac += strings.Repeat("0", places-len(frac))
	}
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

// FormulaSafe is a text cell as the Excel profile writes it: a value that
// begins with '=', '+', '-', '@', a tab or a carriage return, which a
// spreadsheet would run as a formula, gets a leading apostrophe (the
// spreadsheet's own mark for "this cell is text"); any other is as it is.
func FormulaSafe(v string) string {
	if v == "" {
		return v
	}
	switch v[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + v
	}
	return v
}

// KeepText is an identifier or phone number cell as the Excel profile
// writes it: formula-safe (FormulaSafe), and a value a spreadsheet would
// read as a number or a date (73657811, 7365-7811, 00123, 1E5,
// 2026/11/26) gets the leading apostrophe too, so its digits, leading
// zeros and separators stay as written.
func KeepText(v string) string {
	if safe := FormulaSafe(v); safe != v {
		return safe
	}
	if looksNumeric(v) {
		return "'" + v
	}
	return v
}

// looksNumeric reports whether a spreadsheet may read v as a number or a
// date: digits with only separators, signs and brackets between them, or
// digits around one exponent letter.
func looksNumeric(v string) bool {
	digits, exp := 0, 0
	for i, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune(" .,-+()/:", r):
		case (r == 'e' || r == 'E') && i > 0 && exp == 0:
			exp++
		default:
			return false
		}
	}
	return digits > 0
}
