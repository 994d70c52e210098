package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/ordersync/ordersync"
)

// countWrites installs triggers that count, per name, the rows inserted,
// deleted and updated in order_line_items and order_metadata, and the
// updates of orders that name one of its document's identifying columns
// ("orders_document"): a way to see what a write touched in both dialects.
func countWrites(t *testing.T, db *DB) func() map[string]int {
	t.Helper()
	ctx := context.Background()
	var stmts []string
	if db.dialect == DialectPostgres {
		stmts = []string{
			`CREATE TABLE test_writes (name TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
			`CREATE FUNCTION test_count_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO test_writes (name, n) VALUES (TG_ARGV[0], 1) ON CONFLICT (name) DO UPDATE SET n = test_writes.n + 1;
    RETURN NULL;
END $$`,
			`CREATE TRIGGER test_items AFTER INSERT OR UPDATE OR DELETE ON order_line_items FOR EACH ROW EXECUTE FUNCTION test_count_write('order_line_items')`,
			`CREATE TRIGGER test_metadata AFTER INSERT OR UPDATE OR DELETE ON order_metadata FOR EACH ROW EXECUTE FUNCTION test_count_write('order_metadata')`,
			`CREATE TRIGGER test_orders AFTER UPDATE OF name, order_reference, total, created_at, store_name ON orders FOR EACH ROW EXECUTE FUNCTION test_count_write('orders_document')`,
		}
	} else {
		stmts = []string{`CREATE TABLE test_writes (name TEXT PRIMARY KEY, n INTEGER NOT NULL)`}
		count := func(name string) string {
			return `BEGIN INSERT INTO test_writes (name, n) VALUES ('` + name + `', 1) ON CONFLICT (name) DO UPDATE SET n = n + 1; END`
		}
		for _, table := range []string{"order_line_items", "order_metadata"} {
			for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
				stmts = append(stmts, `CREATE TRIGGER test_`+table+`_`+op+` AFTER `+op+` ON `+table+` `+count(table))
			}
		}
		stmts = append(stmts, `CREATE TRIGGER test_orders AFTER UPDATE OF name, order_reference, total, created_at, store_name ON orders `+count("orders_document"))
	}
	for _, s := range stmts {
		if _, err := db.write.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return func() map[string]int {
		t.Helper()
		var rows []struct {
			Name string `db:"name"`
			N    int    `db:"n"`
		}
		if err := db.write.SelectContext(ctx, &rows, `SELECT name, n FROM test_writes`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.write.ExecContext(ctx, `DELETE FROM test_writes`); err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, r := range rows {
			m[r.Name] = r.N
		}
		return m
	}
}

// TestApplyWritesOnlyWhatChanged: a fetched order whose document changed is
// written where it differs from its stored row: a status change rewrites
// neither its line items nor its metadata nor its other columns, a changed
// line item rewrites the line items, and the mirror holds the document in
// every case.
func TestApplyWritesOnlyWhatChanged(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		const code = "wOnly01"
		writes := countWrites(t, db)
		check := func(want *ordersync.Order) {
			t.Helper()
			got, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, code)
			if err != nil {
				t.Fatal(err)
			}
			if diffs := ordersync.DiffOrders(want, &got.Order); len(diffs) > 0 {
				t.Errorf("the mirror differs from the document: %v", diffs)
			}
		}
		items := func(edit func(items []any)) func(doc map[string]any) {
			return func(doc map[string]any) { edit(doc["lineItems"].([]any)) }
		}
		quantity3 := items(func(li []any) { li[0].(map[string]any)["quantity"] = json.Number("3") })

		created := orderDoc(t, code, 1, ordersync.StatusPending)
		apply(t, db, fetched(created, 1))
		check(created)
		// (On PostgreSQL a new order's row is a placeholder first, which
		// the write updates.)
		if got := writes(); got["order_line_items"] != 2 || got["order_metadata"] != 2 {
			t.Errorf("a new order wrote %v, want its 2 line items and 2 metadata rows inserted", got)
		}

		steps := []struct {
			name  string
			order *ordersync.Order
			want  map[string]int
		}{
			{"paid", orderDoc(t, code, 1, ordersync.StatusPaid), map[string]int{}},
			{"finalized", orderDoc(t, code, 1, ordersync.StatusFinalized), map[string]int{}},
			{"a line item's quantity", orderDoc(t, code, 1, ordersync.StatusFinalized, quantity3),
				map[string]int{"order_line_items": 4}},
			{"a metadata value", orderDoc(t, code, 1, ordersync.StatusFinalized, quantity3, func(doc map[string]any) {
				doc["metadata"].([]any)[1].(map[string]any)["value"] = "web"
			}), map[string]int{"order_metadata": 4}},
			{"the name", orderDoc(t, code, 1, ordersync.StatusFinalized, quantity3, func(doc map[string]any) {
				doc["metadata"].([]any)[1].(map[string]any)["value"] = "web"
				doc["name"] = "Pedido A-1043"
			}), map[string]int{"orders_document": 1}},
		}
		seq := int64(1)
		for _, s := range steps {
			seq++
			if res := apply(t, db, fetched(s.order, seq)); !res[0].Changed {
				t.Fatalf("%s: the order did not change", s.name)
			}
			check(s.order)
			if got := writes(); !equalCounts(got, s.want) {
				t.Errorf("%s: wrote %v, want %v", s.name, got, s.want)
			}
		}

		// Within one batch the write compares the last document with the
		// stored one, not with the batch's earlier document: a line item
		// changed and changed back is not rewritten.
		back := orderDoc(t, code, 1, ordersync.StatusFinalized, quantity3, func(doc map[string]any) {
			doc["metadata"].([]any)[1].(map[string]any)["value"] = "web"
			doc["name"] = "Pedido A-1043"
			doc["description"] = "otra"
		})
		apply(t, db, fetched(orderDoc(t, code, 1, ordersync.StatusFinalized, func(doc map[string]any) { doc["name"] = "x" }), seq+1), fetched(back, seq+2))
		check(back)
		if got := writes(); len(got) != 0 {
			t.Errorf("a batch that ends with the stored line items, metadata and name wrote %v, want nothing of them", got)
		}
	})
}

// TestApplyWritesTheReferenceARefFilled: RecordOrderRef fills the
// reference of a fetched order whose document had none; the next document
// that changes is written with its own (empty) reference, as the row is
// compared with what it holds, not with what its document said.
func TestApplyWritesTheReferenceARefFilled(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		const code = "wRef001"
		noRef := func(doc map[string]any) { doc["orderReference"] = "" }
		apply(t, db, fetched(orderDoc(t, code, 1, ordersync.StatusPending, noRef), 1))
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: code, Reference: "from-a-link"}); err != nil {
			t.Fatal(err)
		}
		paid := orderDoc(t, code, 1, ordersync.StatusPaid, noRef)
		apply(t, db, fetched(paid, 2))
		got, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, code)
		if err != nil {
			t.Fatal(err)
		}
		if diffs := ordersync.DiffOrders(paid, &got.Order); len(diffs) > 0 {
			t.Errorf("the mirror differs from the document: %v", diffs)
		}
	})
}

func equalCounts(got, want map[string]int) bool {
	for k, v := range got {
		if want[k] != v {
			return false
		}
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestSameLineItems: line items are the same exactly where their rows'
// values are, amounts compared by the text written (6.5 is not 6.50).
func TestSameLineItems(t *testing.T) {
	a := ordersync.MustAmount
	promo := a("0.99")
	base := ordersync.LineItem{ProductID: "1", SKU: "S", Name: "N", Price: a("6.50"), PromoPrice: &promo, Quantity: 2, ImageURL: "u", SubTotal: a("13.00")}
	other := a("0.990")
	edits := []func(li *ordersync.LineItem){
		func(li *ordersync.LineItem) {},
		func(li *ordersync.LineItem) { li.ProductID = "2" },
		func(li *ordersync.LineItem) { li.SKU = "T" },
		func(li *ordersync.LineItem) { li.Name = "M" },
		func(li *ordersync.LineItem) { li.Price = a("6.5") },
		func(li *ordersync.LineItem) { li.Price = a("6.51") },
		func(li *ordersync.LineItem) { li.PromoPrice = nil },
		func(li *ordersync.LineItem) { li.PromoPrice = &other },
		func(li *ordersync.LineItem) { li.Quantity = 3 },
		func(li *ordersync.LineItem) { li.ImageURL = "" },
		func(li *ordersync.LineItem) { li.SubTotal = a("13") },
	}
	for i, edit := range edits {
		li := base
		edit(&li)
		want := slices.EqualFunc(lineItemValues(0, 0, base), lineItemValues(0, 0, li), sameValue)
		if got := sameLineItems([]ordersync.LineItem{base}, []ordersync.LineItem{li}); got != want {
			t.Errorf("edit %d: sameLineItems = %v, want %v", i, got, want)
		}
		if i > 0 && want {
			t.Errorf("edit %d changes nothing written", i)
		}
	}
	if sameLineItems([]ordersync.LineItem{base}, nil) {
		t.Error("one line item and none are the same")
	}
}
