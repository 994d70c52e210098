// Package export writes the back office's export files from the mirror:
// orders, their line items or their status changes, as CSV or JSON Lines,
// one batch of the mirror at a time. The admin API and the console's
// Export page stream them and `ordersync orders export` writes them to a
// file; all go through Run, so a file is the same whichever way it was
// made.
//
// What a file holds is a contract: the columns of each kind (Columns) are
// only ever appended to, and docs/back-office.md says what each means.
package export

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// Kind is what an export writes a row for.
type Kind string

// Kinds of export.
const (
	// Orders: one row per order.
	Orders Kind = "orders"
	// OrderLines: one row per line item of each order.
	OrderLines Kind = "order-lines"
	// StatusChanges: one row per recorded status transition of each order.
	StatusChanges Kind = "status-changes"
)

// Kinds lists every kind, in the order help texts give them.
var Kinds = []Kind{Orders, OrderLines, StatusChanges}

// Format is the file format.
type Format string

// Formats of an export file.
const (
	// CSV is RFC 4180 with a header row.
	CSV Format = "csv"
	// JSONL is JSON Lines: one object per row, its keys the CSV's columns
	// in the same order, every value a string ("" where the CSV cell is
	// empty).
	JSONL Format = "jsonl"
)

// Profile says who reads a CSV file.
type Profile string

// Profiles of a CSV file.
const (
	// Plain keeps every value exactly as mirrored.
	Plain Profile = "plain"
	// Excel is for spreadsheets: a UTF-8 byte-order mark; a text cell
	// that begins with a character a spreadsheet would read as the start
	// of a formula gets a leading apostrophe (FormulaSafe), and so does an
	// identifier or phone number it would read as a number (KeepText);
	// times are written as SpreadsheetTime, the header naming their zone.
	Excel Profile = "excel"
)

// Options say how a file is written.
type Options struct {
	Kind    Kind
	Format  Format  // default CSV
	Profile Profile // default Plain; CSV only
	// Delimiter separates a CSV's cells: ',' (the default) or ';'.
	Delimiter rune
	// DecimalComma writes amounts with a decimal comma (CSV only).
	DecimalComma bool
	// Location is the zone the local time columns are in (default UTC);
	// the _utc columns are in UTC whatever it is.
	Location *time.Location
	// ZoneFrom and ZoneTo bound the times the rows are about (the filter's
	// days): the Excel profile's header names the offsets Location takes
	// between them. Zero: its offset when the file is written.
	ZoneFrom, ZoneTo time.Time
}

// Settings are the options as a user spells them: the admin API's query
// parameters and the CLI's flags of the same names. "" is the default.
type Settings struct {
	Kind, Format, Profile, Delimiter, Decimal string
}

// ParseSettings reads settings into options (without a location: see
// Zone). A bad setting is an *ordersync.ValidationError naming each one
// and what it accepts.
func ParseSettings(s Settings) (Options, error) {
	var opts Options
	fields := map[string][]string{}
	bad := func(name, got string, want []string) {
		fields[name] = append(fields[name], fmt.Sprintf("%q is not one of %s", got, strings.Join(want, ", ")))
	}
	if k := Kind(strings.ToLower(strings.TrimSpace(s.Kind))); slices.Contains(Kinds, k) {
		opts.Kind = k
	} else {
		bad("kind", s.Kind, []string{string(Orders), string(OrderLines), string(StatusChanges)})
	}
	switch f := Format(strings.ToLower(strings.TrimSpace(s.Format))); f {
	case "", CSV:
		opts.Format = CSV
	case JSONL:
		opts.Format = JSONL
	default:
		bad("format", s.Format, []string{string(CSV), string(JSONL)})
	}
	switch p := Profile(strings.ToLower(strings.TrimSpace(s.Profile))); p {
	case "", Plain:
		opts.Profile = Plain
	case Excel:
		opts.Profile = Excel
	default:
		bad("profile", s.Profile, []string{string(Plain), string(Excel)})
	}
	switch strings.ToLower(s.Delimiter) {
	case "", ",", "comma":
		opts.Delimiter = ','
	case ";", "semicolon":
		opts.Delimiter = ';'
	default:
		bad("delimiter", s.Delimiter, []string{`","`, `";"`, "comma", "semicolon"})
	}
	switch d := strings.ToLower(strings.TrimSpace(s.Decimal)); d {
	case "", "point":
		opts.DecimalComma = false
	case "comma":
		opts.DecimalComma = true
	default:
		bad("decimal", s.Decimal, []string{"point", "comma"})
	}
	if opts.Format == JSONL {
		// JSON has one way to write a number and no spreadsheet reads it.
		if opts.Profile != Plain {
			fields["profile"] = append(fields["profile"], "applies to CSV only (format=csv)")
		}
		if opts.Delimiter != ',' {
			fields["delimiter"] = append(fields["delimiter"], "applies to CSV only (format=csv)")
		}
		if opts.DecimalComma {
			fields["decimal"] = append(fields["decimal"], "applies to CSV only (format=csv)")
		}
	}
	if len(fields) > 0 {
		return Options{}, &ordersync.ValidationError{Title: "invalid export settings", Fields: fields}
	}
	return opts, nil
}

// Zone is the location an export's times are written in: tz when given (an
// IANA zone such as America/El_Salvador, or UTC), else the time zone of the
// account's store as its latest order names it, else UTC. An unknown tz is
// an *ordersync.ValidationError for "tz". Zones come from the time zone
// database embedded in the binary, so every machine gives the same answer.
func Zone(ctx context.Context, src ordersync.OrderExporter, account, tz string) (*time.Location, error) {
	if tz = strings.TrimSpace(tz); tz != "" {
		loc, err := ordersync.ParseZone(tz)
		if err != nil {
			return nil, &ordersync.ValidationError{Title: "invalid export settings",
				Fields: map[string][]string{"tz": {err.Error()}}}
		}
		return loc, nil
	}
	store, err := src.StoreTimeZone(ctx, account)
	if err != nil {
		return nil, err
	}
	if loc, err := ordersync.ParseZone(store); err == nil {
		return loc, nil
	}
	return time.UTC, nil
}

// Run writes the export of the orders filter selects to w, a batch of the
// mirror at a time, and returns how many rows it wrote. afterBatch, when
// not nil, runs after each batch reached w, with the rows so far: to flush
// a response, extend its deadline or show progress. An error ends the
// export where it is; what reached w by then is not a whole file.
func Run(ctx context.Context, src ordersync.OrderExporter, filter ordersync.OrderFilter, opts Options, batchSize int,
	w io.Writer, afterBatch func(rows int) error) (int, error) {
	ew, err := NewWriter(w, opts)
	if err != nil {
		return 0, err
	}
	params := ordersync.ExportParams{Filter: filter, LineItems: opts.Kind == OrderLines,
		StatusChanges: opts.Kind == StatusChanges, Fields: ordersync.ExportRepeatedFields, BatchSize: batchSize}
	if opts.Kind == Orders {
		params.Fields = ordersync.ExportOrderFields
	}
	err = src.ExportOrders(ctx, params, func(batch []ordersync.ExportedOrder) error {
		if err := ew.Write(batch); err != nil {
			return err
		}
		if err := ew.Flush(); err != nil {
			return err
		}
		if afterBatch != nil {
			return afterBatch(ew.Rows())
		}
		return nil
	})
	if err != nil {
		return ew.Rows(), err
	}
	return ew.Rows(), ew.Flush()
}
