package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// identifierOrders add to searchOrders a Spanish store's order (its own
// account) whose phone is written as a national number, and a reference
// with capitals and accents.
var identifierOrders = []searchOrder{
	{code: "s-es", account: "madrid", status: ordersync.StatusPaid, day: 16, total: "12.50", currency: "EUR", ref: "Pedido-ÁB-77",
		buyer: []string{"Lucía Gómez", "Lucia.Gomez@Example.ES", "612 345 678", "E777"}},
	{code: "s-es2", account: "madrid", status: ordersync.StatusPending, day: 17, total: "12.5", currency: "EUR", ref: "pedido-áb-78"},
}

func loadIdentifierOrders(t *testing.T, db *DB) {
	t.Helper()
	loadSearchOrders(t, db)
	var batch []ordersync.ApplyParams
	for i, so := range identifierOrders {
		so.country = "ES"
		batch = append(batch, so.params(t, int64(50+i)))
	}
	apply(t, db, batch...)
}

// identifierSearches are what a caller says and the orders each finds,
// per account.
var identifierSearches = []struct {
	account, q string
	want       []string
}{
	{ordersync.DefaultAccount, "MARIA@EXAMPLE.COM", []string{"s-c"}},
	{ordersync.DefaultAccount, "70002222", []string{"s-c"}},
	{ordersync.DefaultAccount, "7000-2222", []string{"s-c"}},
	{ordersync.DefaultAccount, "+503 7000 2222", []string{"s-c"}},
	{ordersync.DefaultAccount, "(503) 7000.2222", []string{"s-c"}},
	{ordersync.DefaultAccount, "inv-", []string{"s-e"}},
	{ordersync.DefaultAccount, "100", []string{"s-b"}},
	{ordersync.DefaultAccount, "100.000", []string{"s-b"}},
	{"madrid", "lucia.gomez@example.es", []string{"s-es"}},
	{"madrid", "612345678", []string{"s-es"}},
	{"madrid", "+34 612 34 56 78", []string{"s-es"}},
	{"madrid", "0034-612-345-678", []string{"s-es"}},
	{"madrid", "PEDIDO-ÁB", []string{"s-es2", "s-es"}},
	{"madrid", "pedido-áb-77", []string{"s-es"}},
	{"madrid", "pedido-ab", []string{}},
	{"madrid", "12.50", []string{"s-es2", "s-es"}},
	{"madrid", "12.5", []string{"s-es2", "s-es"}},
	{"madrid", "12.51", []string{}},
	// Across accounts, a national number is read in every country known.
	{"", "612-345-678", []string{"s-es"}},
	{"", "7000 1111", []string{"s-x", "s-b"}},
}

func checkIdentifierSearches(t *testing.T, db *DB) {
	t.Helper()
	for _, s := range identifierSearches {
		if got := listCodes(t, db, ordersync.OrderFilter{Account: s.account, Q: s.q}); !slices.Equal(got, s.want) {
			t.Errorf("account %q, q %q: %q, want %q", s.account, s.q, got, s.want)
		}
	}
}

// TestSearchIdentifiers: every kind of identifier search, as written and
// read back by the store.
func TestSearchIdentifiers(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadIdentifierOrders(t, db)
		checkIdentifierSearches(t, db)
		// Exports select what the listing does.
		var codes []string
		err := db.ExportOrders(context.Background(), ordersync.ExportParams{Filter: ordersync.OrderFilter{Account: "madrid", Q: "+34612345678"}},
			func(batch []ordersync.ExportedOrder) error {
				for _, o := range batch {
					codes = append(codes, o.Order.OrderCode)
				}
				return nil
			})
		if err != nil || !slices.Equal(codes, []string{"s-es"}) {
			t.Errorf("export by phone: %q, %v", codes, err)
		}
	})
}

// TestIdentifierKeysMigration: a mirror made by the migrations before
// 00023 gets its keys once that migration and its backfill ran. The
// orders are written at the current schema, then the schema is taken down
// to 22, which drops the keys and leaves every other column as the
// previous version wrote it.
func TestIdentifierKeysMigration(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadIdentifierOrders(t, db)
		_, unlock := migrateDownTo(t, db, 22)
		unlock()
		var n int
		if err := db.read.Get(&n, `SELECT COUNT(*) FROM orders WHERE buyer_phone <> ''`); err != nil || n != 5 {
			t.Fatalf("orders with a phone at version 22: %d, %v", n, err)
		}
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkIdentifierSearches(t, db)
		var pending, missing int
		if err := db.read.Get(&pending, `SELECT COUNT(*) FROM identifier_backfill`); err != nil || pending != 0 {
			t.Errorf("backfill mark: %d, %v", pending, err)
		}
		if err := db.read.Get(&missing, `SELECT COUNT(*) FROM orders WHERE buyer_phone <> '' AND buyer_phone_key = ''`); err != nil || missing != 0 {
			t.Errorf("%d phones without their key: %v", missing, err)
		}
	})
}

// TestIdentifierSearchesSeekAnIndex: each identifier's lookup is a seek in
// its index on both dialects (PostgreSQL told not to scan, as on a large
// mirror its statistics would tell it), never a scan of the orders: in
// one store, and in every store (a seek per store the mirror holds).
func TestIdentifierSearchesSeekAnIndex(t *testing.T) {
	want := map[string]string{
		"order_code": "", "order_id": "orders_order_id", "payment_authorization_code": "orders_authorization_code",
		"buyer_email_key": "orders_buyer_email_key", "order_reference_key": "orders_order_reference_key",
		"buyer_phone_key": "orders_buyer_phone_key", "total_key": "orders_account_total_id",
	}
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadIdentifierOrders(t, db)
		ctx := context.Background()
		// Enough orders, each with its own identifiers, for PostgreSQL's
		// statistics to tell an index's seek from a walk.
		var more []ordersync.ApplyParams
		for i := range 400 {
			more = append(more, searchOrder{code: fmt.Sprintf("i-%03d", i), status: ordersync.StatusPaid, day: 1 + i%28, total: fmt.Sprintf("%d.%02d", i, i%100),
				ref: fmt.Sprintf("R-%03d", i), buyer: []string{"Ana", fmt.Sprintf("a%d@example.com", i), fmt.Sprintf("+5036%07d", i), fmt.Sprintf("X%d", i)}}.params(t, int64(100+i)))
		}
		apply(t, db, more...)
		if db.dialect == DialectPostgres {
			if _, err := db.write.ExecContext(ctx, `ANALYZE orders`); err != nil {
				t.Fatal(err)
			}
		}
		matches := identifierMatches("12.50", []string{"50370001111", "70001111"}, false)
		if len(matches) != len(want) {
			t.Fatalf("%d identifier lookups, want %d", len(matches), len(want))
		}
		var stores []string
		if err := db.inReadTx(ctx, "stores", func(tx *sqlx.Tx) (err error) { stores, err = db.mirrorStores(ctx, tx); return err }); err != nil {
			t.Fatal(err)
		}
		if want := []string{ordersync.DefaultAccount, "madrid", "other"}; !slices.Equal(stores, want) {
			t.Fatalf("the mirror's stores: %v, want %v", stores, want)
		}
		for _, m := range matches {
			for _, account := range []string{ordersync.DefaultAccount, ""} {
				acct, acctArgs := storeCondition("account", account, stores)
				q := db.rebind(`SELECT id FROM orders WHERE ` + m.cond + ` AND ` + m.column + ` <> ''` + acct)
				args := slices.Concat(m.args, acctArgs)
				var plan []string
				err := db.inReadTx(ctx, "explain", func(tx *sqlx.Tx) error {
					if db.dialect == DialectSQLite {
						rows, err := tx.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
						if err != nil {
							return err
						}
						defer rows.Close()
						for rows.Next() {
							var id, parent, unused int
							var detail string
							if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
								return err
							}
							plan = append(plan, detail)
						}
						return rows.Err()
					}
					if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
						return err
					}
					return tx.SelectContext(ctx, &plan, "EXPLAIN "+q, args...)
				})
				if err != nil {
					t.Fatalf("%s: %v", m.column, err)
				}
				p := strings.Join(plan, "\n")
				scan := slices.ContainsFunc(plan, func(l string) bool { return l == "SCAN orders" || strings.Contains(l, "Seq Scan") })
				// The index's condition names the identifier: a seek on it, not
				// a walk of the account's entries filtered row by row.
				seek := slices.ContainsFunc(plan, func(l string) bool {
					_, cond, _ := strings.Cut(l, "Index Cond")
					if strings.HasPrefix(l, "SEARCH") {
						_, cond, _ = strings.Cut(l, " (")
					}
					return strings.Contains(cond, m.column)
				})
				if !strings.Contains(p, want[m.column]) || scan || !seek {
					t.Errorf("%s, account %q: plan\n%s\nwant a seek in %s", m.column, account, p, want[m.column])
				}
			}
		}
	})
}

func TestPrefixEnd(t *testing.T) {
	for _, tt := range []struct{ p, want string }{
		{"inv", "inw"}, {"a-", "a."}, {"pedido-á", "pedido-â"}, {"z", "{"},
		{"a\U0010FFFF", "b"}, {"\uD7FF", "\uE000"}, {"", ""}, {"\U0010FFFF", ""},
	} {
		got, ok := prefixEnd(tt.p)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("prefixEnd(%q) = %q, %v, want %q", tt.p, got, ok, tt.want)
		}
	}
}

// TestBroadReferencePrefix: a beginning shared by more references than
// maxReferencePrefixOrders matches whole references only; one shared by
// fewer finds them all.
func TestBroadReferencePrefix(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		var batch []ordersync.ApplyParams
		for i := range maxReferencePrefixOrders + 1 {
			batch = append(batch, searchOrder{code: fmt.Sprintf("r-%04d", i), status: ordersync.StatusPending, day: 1 + i%28, total: "1.00",
				ref: fmt.Sprintf("INV-%04d", i)}.params(t, int64(1+i)))
		}
		batch = append(batch, searchOrder{code: "r-inv", status: ordersync.StatusPending, day: 1, total: "1.00", ref: "inv"}.params(t, 9000))
		apply(t, db, batch...)
		all := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Limit: 1, Count: true}
		for _, s := range []struct {
			q    string
			want int
		}{{"INV", 1}, {"inv-", 0}, {"inv-1", 1000}, {"INV-0042", 1}} {
			f := all
			f.Q = s.q
			page, err := db.ListOrders(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			if *page.Total != s.want {
				t.Errorf("q %q: %d orders, want %d", s.q, *page.Total, s.want)
			}
		}
	})
}
