package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ordersync/ordersync"
)

// priced sets an order's currency and amounts (its subtotal and total are
// total; shipping, discount and surcharge zero).
func priced(currency, total string) func(doc map[string]any) {
	return func(doc map[string]any) {
		doc["store"].(map[string]any)["currencyCode"] = currency
		doc["subtotal"] = json.Number(total)
		doc["total"] = json.Number(total)
		doc["totalDetails"] = map[string]any{"shippingAmount": json.Number("0"), "discountAmount": json.Number("0"), "surchargeAmount": json.Number("0")}
	}
}

// loadReportOrders mirrors ten paid USD orders of 0.10, two KWD orders
// with three decimals and a USD order with more decimals than USD has.
func loadReportOrders(t *testing.T, db *DB) {
	t.Helper()
	var params []ordersync.ApplyParams
	for i := range 10 {
		code := fmt.Sprintf("dime-%d", i)
		params = append(params, fetched(orderDoc(t, code, 100+i, ordersync.StatusPaid, priced("USD", "0.10")), int64(1+i)))
	}
	params = append(params,
		fetched(orderDoc(t, "kwd-a", 200, ordersync.StatusPaid, priced("KWD", "1.125")), 20),
		fetched(orderDoc(t, "kwd-b", 201, ordersync.StatusPaid, priced("KWD", "2.5")), 21),
		fetched(orderDoc(t, "odd", 300, ordersync.StatusPending, priced("USD", "10.999")), 30),
	)
	apply(t, db, params...)
}

// checkReportOrders: SUM over the integer columns is exact in both
// dialects, a three-decimal currency keeps three, and an amount no integer
// says exactly has none.
func checkReportOrders(t *testing.T, db *DB) {
	t.Helper()
	type sum struct {
		Currency   string `db:"currency"`
		MinorUnits int    `db:"minor_units"`
		Orders     int    `db:"orders"`
		Exact      int    `db:"exact"`
		Minor      int64  `db:"minor"`
	}
	var sums []sum
	if err := db.read.Select(&sums, `SELECT currency, minor_units, COUNT(*) AS orders, COUNT(total_minor) AS exact, SUM(total_minor) AS minor
FROM report_orders WHERE status = 'PAID' GROUP BY currency, minor_units ORDER BY currency`); err != nil {
		t.Fatal(err)
	}
	want := []sum{{"KWD", 3, 2, 2, 3625}, {"USD", 2, 10, 10, 100}}
	if fmt.Sprint(sums) != fmt.Sprint(want) {
		t.Errorf("paid sums = %+v, want %+v", sums, want)
	}
	for _, s := range sums {
		got := ordersync.FormatMinorUnits(ordersync.MustAmount(fmt.Sprintf("%de-%d", s.Minor, s.MinorUnits)), s.Currency)
		if w := map[string]string{"USD": "1.00", "KWD": "3.625"}[s.Currency]; got != w {
			t.Errorf("%s total = %s, want %s", s.Currency, got, w)
		}
	}
	var odd struct {
		Total    string `db:"total"`
		Minor    *int64 `db:"total_minor"`
		Subtotal *int64 `db:"subtotal_minor"`
	}
	if err := db.read.Get(&odd, `SELECT CAST(total AS TEXT) AS total, total_minor, subtotal_minor FROM report_orders WHERE order_code = 'odd'`); err != nil {
		t.Fatal(err)
	}
	if odd.Total != "10.999" || odd.Minor != nil || odd.Subtotal != nil {
		t.Errorf("10.999 USD reads as %+v, want its decimal and no integer", odd)
	}
	var kwd struct {
		Total string `db:"total"`
		Minor int64  `db:"total_minor"`
		Zero  int64  `db:"shipping_amount_minor"`
		Ref   string `db:"order_reference"`
		Auth  string `db:"authorization_code"`
	}
	if err := db.read.Get(&kwd, `SELECT CAST(total AS TEXT) AS total, total_minor, shipping_amount_minor, order_reference, authorization_code
FROM report_orders WHERE order_code = 'kwd-a'`); err != nil {
		t.Fatal(err)
	}
	if kwd.Total != "1.125" || kwd.Minor != 1125 || kwd.Zero != 0 || kwd.Ref != "ref-kwd-a" || kwd.Auth != "204981" {
		t.Errorf("kwd-a reads as %+v", kwd)
	}
}

func TestReportViews(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		loadReportOrders(t, db)
		// A placeholder, not yet fetched, is no row of the views.
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "later", ID: "999"}); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.read.Get(&n, `SELECT COUNT(*) FROM report_orders`); err != nil || n != 13 {
			t.Errorf("report_orders has %d rows (%v), want 13", n, err)
		}
		checkReportOrders(t, db)

		var lines []struct {
			Code     string `db:"order_code"`
			Ref      string `db:"order_reference"`
			Currency string `db:"currency"`
			Line     int    `db:"line_number"`
			SubTotal string `db:"line_subtotal"`
		}
		if err := db.read.Select(&lines, `SELECT order_code, order_reference, currency, line_number, CAST(line_subtotal AS TEXT) AS line_subtotal
FROM report_order_lines WHERE order_code = 'kwd-a' ORDER BY line_number`); err != nil {
			t.Fatal(err)
		}
		if len(lines) != 2 || lines[0].Ref != "ref-kwd-a" || lines[0].Currency != "KWD" || lines[0].Line != 1 || lines[1].SubTotal != "0.99" {
			t.Errorf("report_order_lines of kwd-a = %+v", lines)
		}

		var entry struct {
			Number int    `db:"entry_number"`
			Ref    string `db:"order_reference"`
			Value  string `db:"value"`
		}
		if err := db.read.Get(&entry, `SELECT entry_number, order_reference, value FROM report_order_metadata WHERE order_code = 'kwd-a' AND name = 'numero_orden'`); err != nil {
			t.Fatal(err)
		}
		if entry.Number != 1 || entry.Ref != "ref-kwd-a" || entry.Value != "A-1042" {
			t.Errorf("report_order_metadata of kwd-a = %+v", entry)
		}

		apply(t, db, fetched(orderDoc(t, "odd", 300, ordersync.StatusCancelled, priced("USD", "10.999")), 40))
		var changes []struct {
			From string `db:"from_status"`
			To   string `db:"to_status"`
			Ref  string `db:"order_reference"`
		}
		if err := db.read.Select(&changes, `SELECT from_status, to_status, order_reference FROM report_status_changes WHERE order_code = 'odd' ORDER BY id`); err != nil {
			t.Fatal(err)
		}
		if len(changes) != 2 || changes[1].From != "PENDING" || changes[1].To != "CANCELLED" || changes[1].Ref != "ref-odd" {
			t.Errorf("report_status_changes of odd = %+v", changes)
		}
	})
}

// TestMinorUnitsBackfill: orders mirrored before migration 00011 get their
// integer amounts once it ran.
func TestMinorUnitsBackfill(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadReportOrders(t, db)
		ctx := context.Background()
		for _, q := range []string{`UPDATE orders SET minor_units = NULL, subtotal_minor = NULL, shipping_amount_minor = NULL,
    discount_amount_minor = NULL, surcharge_amount_minor = NULL, total_minor = NULL`, `INSERT INTO minor_backfill (pending) VALUES (1)`} {
			if _, err := db.write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		checkReportOrders(t, db)
		var pending int
		if err := db.read.Get(&pending, `SELECT COUNT(*) FROM minor_backfill`); err != nil || pending != 0 {
			t.Errorf("backfill mark: %d, %v", pending, err)
		}
	})
}
