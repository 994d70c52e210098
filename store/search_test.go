package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// searchOrder is an order of the search tests: its code and what differs.
type searchOrder struct {
	code     string
	account  string
	status   ordersync.Status
	day      int
	total    string
	currency string
	country  string
	buyer    []string // name, email, phone, authorization code
	ref      string
}

func (so searchOrder) params(t testing.TB, seq int64) ordersync.ApplyParams {
	t.Helper()
	o := orderDoc(t, so.code, int(seq), so.status, func(doc map[string]any) {
		doc["created"] = fmt.Sprintf("2026-10-%02dT12:00:00.000Z", so.day)
		doc["total"] = json.Number(so.total)
		if so.currency != "" {
			doc["store"].(map[string]any)["currencyCode"] = so.currency
		}
		if so.country != "" {
			doc["store"].(map[string]any)["countryCode"] = so.country
		}
		if so.ref != "" {
			doc["orderReference"] = so.ref
		}
		if so.buyer != nil {
			doc["payment"] = map[string]any{"authorizationCode": so.buyer[3], "voucherUrl": "",
				"buyer": map[string]any{"name": so.buyer[0], "email": so.buyer[1], "phone": so.buyer[2]}}
		}
	})
	p := fetched(o, seq)
	if so.account != "" {
		p.Account = so.account
	}
	return p
}

var searchOrders = []searchOrder{
	{code: "s-a", status: ordersync.StatusPending, day: 10, total: "5.00"},
	{code: "s-b", status: ordersync.StatusPaid, day: 11, total: "100.00", buyer: []string{"José Peña", "jose@example.com", "+50370001111", "A111"}},
	{code: "s-c", status: ordersync.StatusPaid, day: 12, total: "20.50", currency: "EUR", buyer: []string{"MARÍA José Ruiz", "maria@example.com", "+50370002222", "B222"}},
	{code: "s-d", status: ordersync.StatusCancelled, day: 13, total: "9.99"},
	{code: "s-e", status: ordersync.StatusFinalized, day: 14, total: "1000", ref: "INV-7", buyer: []string{"Joselyn Smith", "js@example.com", "+50370003333", "C333"}},
	{code: "s-x", account: "other", status: ordersync.StatusPaid, day: 15, total: "50", buyer: []string{"José Otro", "jose@example.com", "+50370001111", "A111"}},
}

func loadSearchOrders(t *testing.T, db *DB) {
	t.Helper()
	var batch []ordersync.ApplyParams
	for i, so := range searchOrders {
		batch = append(batch, so.params(t, int64(i+1)))
	}
	apply(t, db, batch...)
}

func listCodes(t *testing.T, db *DB, f ordersync.OrderFilter) []string {
	t.Helper()
	page, err := db.ListOrders(context.Background(), f)
	if err != nil {
		t.Fatalf("ListOrders(%+v): %v", f, err)
	}
	codes := []string{}
	for _, m := range page.Orders {
		codes = append(codes, m.Order.OrderCode)
	}
	return codes
}

func TestListOrdersFiltersAndSearch(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 10, d, 0, 0, 0, 0, time.UTC) }
	amount := func(s string) *ordersync.Amount { a := ordersync.MustAmount(s); return &a }
	// paid is when the fetch with seq saw the order paid (fetched's time).
	paid := func(seq int) time.Time { return time.Date(2026, 10, 10, 18, 5, seq, 0, time.UTC) }
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadSearchOrders(t, db)
		def := func(f ordersync.OrderFilter) ordersync.OrderFilter { f.Account = ordersync.DefaultAccount; return f }
		tests := []struct {
			name   string
			filter ordersync.OrderFilter
			want   []string
		}{
			{"name, case and accents", def(ordersync.OrderFilter{Q: "jose"}), []string{"s-e", "s-c", "s-b"}},
			{"name in capitals with an accent", def(ordersync.OrderFilter{Q: "JOSÉ"}), []string{"s-e", "s-c", "s-b"}},
			{"word prefix with ñ", def(ordersync.OrderFilter{Q: "peñ"}), []string{"s-b"}},
			{"folded ñ", def(ordersync.OrderFilter{Q: "PENA"}), []string{"s-b"}},
			{"two words in any order", def(ordersync.OrderFilter{Q: "ruiz  JOS"}), []string{"s-c"}},
			{"every word must match", def(ordersync.OrderFilter{Q: "jose smith"}), []string{"s-e"}},
			{"maria without its accent", def(ordersync.OrderFilter{Q: "maria"}), []string{"s-c"}},
			{"inside a word does not match", def(ordersync.OrderFilter{Q: "osé"}), []string{}},
			{"no such name", def(ordersync.OrderFilter{Q: "nobody"}), []string{}},
			{"buyer email", def(ordersync.OrderFilter{Q: "maria@example.com"}), []string{"s-c"}},
			{"buyer phone", def(ordersync.OrderFilter{Q: "+50370001111"}), []string{"s-b"}},
			{"authorization code", def(ordersync.OrderFilter{Q: "C333"}), []string{"s-e"}},
			{"order code", def(ordersync.OrderFilter{Q: "s-d"}), []string{"s-d"}},
			{"order id", def(ordersync.OrderFilter{Q: "3"}), []string{"s-c"}},
			{"reference", def(ordersync.OrderFilter{Q: "INV-7"}), []string{"s-e"}},
			{"default reference", def(ordersync.OrderFilter{Q: "ref-s-a"}), []string{"s-a"}},
			{"reference by its beginning, any case", def(ordersync.OrderFilter{Q: "inv"}), []string{"s-e"}},
			{"reference: the beginning only", def(ordersync.OrderFilter{Q: "NV-7"}), []string{}},
			{"email in capitals", def(ordersync.OrderFilter{Q: "MARIA@Example.com"}), []string{"s-c"}},
			{"email is whole", def(ordersync.OrderFilter{Q: "maria@example"}), []string{}},
			{"phone without the country code", def(ordersync.OrderFilter{Q: "70001111"}), []string{"s-b"}},
			{"phone with dashes", def(ordersync.OrderFilter{Q: "7000-1111"}), []string{"s-b"}},
			{"phone with the code and spaces", def(ordersync.OrderFilter{Q: "+503 7000 1111"}), []string{"s-b"}},
			{"phone with parentheses and dots", def(ordersync.OrderFilter{Q: "(503) 7000.1111"}), []string{"s-b"}},
			{"another number", def(ordersync.OrderFilter{Q: "7000-1112"}), []string{}},
			{"amount in any currency", def(ordersync.OrderFilter{Q: "20.50"}), []string{"s-c"}},
			{"amount with fewer decimals", def(ordersync.OrderFilter{Q: "1000.0"}), []string{"s-e"}},
			{"amount and currency", def(ordersync.OrderFilter{Q: "20.5", Currency: "USD"}), []string{}},
			{"identifiers are exact", def(ordersync.OrderFilter{Q: "C33"}), []string{}},
			{"another account's buyer", ordersync.OrderFilter{Account: "other", Q: "jose"}, []string{"s-x"}},
			{"search and status", def(ordersync.OrderFilter{Q: "jose", Statuses: []ordersync.Status{ordersync.StatusPaid}}), []string{"s-c", "s-b"}},
			{"created range is [from, to)", def(ordersync.OrderFilter{CreatedFrom: day(11), CreatedTo: day(13)}), []string{"s-c", "s-b"}},
			{"created from only", def(ordersync.OrderFilter{CreatedFrom: day(13)}), []string{"s-e", "s-d"}},
			{"created to only", def(ordersync.OrderFilter{CreatedTo: day(11).Add(12 * time.Hour)}), []string{"s-a"}},
			{"created to includes the instant before", def(ordersync.OrderFilter{CreatedTo: day(11).Add(12*time.Hour + time.Microsecond)}), []string{"s-b", "s-a"}},
			{"since", def(ordersync.OrderFilter{Since: day(14)}), []string{"s-e"}},
			{"currency", def(ordersync.OrderFilter{Currency: "EUR"}), []string{"s-c"}},
			{"min total is inclusive and numeric", def(ordersync.OrderFilter{MinTotal: amount("20.5")}), []string{"s-e", "s-c", "s-b"}},
			{"max total", def(ordersync.OrderFilter{MaxTotal: amount("20.500")}), []string{"s-d", "s-c", "s-a"}},
			{"total range", def(ordersync.OrderFilter{MinTotal: amount("9.99"), MaxTotal: amount("100")}), []string{"s-d", "s-c", "s-b"}},
			{"created ascending", def(ordersync.OrderFilter{Sort: ordersync.SortCreatedAsc}), []string{"s-a", "s-b", "s-c", "s-d", "s-e"}},
			{"totals sort as numbers", def(ordersync.OrderFilter{Sort: ordersync.SortTotalDesc}), []string{"s-e", "s-b", "s-c", "s-d", "s-a"}},
			{"totals ascending", def(ordersync.OrderFilter{Sort: ordersync.SortTotalAsc}), []string{"s-a", "s-d", "s-c", "s-b", "s-e"}},
			{"paid range is [from, to)", def(ordersync.OrderFilter{PaidFrom: paid(3), PaidTo: paid(5)}), []string{"s-c"}},
			{"paid from", def(ordersync.OrderFilter{PaidFrom: paid(3)}), []string{"s-e", "s-c"}},
			{"paid to", def(ordersync.OrderFilter{PaidTo: paid(3)}), []string{"s-b"}},
			{"paid, newest first, then never paid", def(ordersync.OrderFilter{Sort: ordersync.SortPaidDesc}), []string{"s-e", "s-c", "s-b", "s-d", "s-a"}},
			{"paid, oldest first, then never paid", def(ordersync.OrderFilter{Sort: ordersync.SortPaidAsc}), []string{"s-b", "s-c", "s-e", "s-a", "s-d"}},
			{"currency and total range by paid time", def(ordersync.OrderFilter{Currency: "USD", MinTotal: amount("5"), MaxTotal: amount("100"), Sort: ordersync.SortPaidDesc}), []string{"s-b", "s-d", "s-a"}},
			{"combined", def(ordersync.OrderFilter{Q: "jose", CreatedFrom: day(11), Currency: "USD", MinTotal: amount("50"), Sort: ordersync.SortTotalAsc}), []string{"s-b", "s-e"}},
		}
		for _, tt := range tests {
			if got := listCodes(t, db, tt.filter); !slices.Equal(got, tt.want) {
				t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
			}
		}
		if _, err := db.ListOrders(context.Background(), def(ordersync.OrderFilter{Since: day(1), CreatedFrom: day(1)})); err == nil {
			t.Error("Since with CreatedFrom: no error")
		}

		// A new document replaces the name's words.
		renamed := searchOrders[1]
		renamed.buyer = []string{"Ana Núñez", "ana@example.com", "+50370009999", "Z999"}
		renamed.status = ordersync.StatusFinalized
		apply(t, db, renamed.params(t, 20))
		if got := listCodes(t, db, def(ordersync.OrderFilter{Q: "pena"})); len(got) != 0 {
			t.Errorf("old name still found after the buyer changed: %q", got)
		}
		if got := listCodes(t, db, def(ordersync.OrderFilter{Q: "nunez"})); !slices.Equal(got, []string{"s-b"}) {
			t.Errorf("new name: %q, want [s-b]", got)
		}
		// And the words' copies of the order's values follow it.
		finalized := def(ordersync.OrderFilter{Q: "nunez", Statuses: []ordersync.Status{ordersync.StatusFinalized}, PaidFrom: paid(2), Sort: ordersync.SortPaidAsc})
		if got := listCodes(t, db, finalized); !slices.Equal(got, []string{"s-b"}) {
			t.Errorf("new status: %q, want [s-b]", got)
		}
	})
}

// TestListOrdersPages walks every sort in pages of two and finds what one
// page of all holds, in the same order; the count is exact when asked for.
func TestListOrdersPages(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadSearchOrders(t, db)
		// Ties on the created time and the total: the row breaks them.
		var more []ordersync.ApplyParams
		for i := range 5 {
			more = append(more, searchOrder{code: fmt.Sprintf("s-t%d", i), status: ordersync.StatusPending, day: 12, total: "20.50"}.params(t, int64(30+i)))
		}
		apply(t, db, more...)
		for _, sort := range ordersync.OrderSorts {
			all := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: sort})
			var walked []string
			f := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: sort, Limit: 2, Count: true}
			for range 20 {
				page, err := db.ListOrders(context.Background(), f)
				if err != nil {
					t.Fatal(err)
				}
				if page.Total == nil || *page.Total != 10 {
					t.Errorf("%s: total %v, want 10", sort, page.Total)
				}
				for _, m := range page.Orders {
					walked = append(walked, m.Order.OrderCode)
				}
				if page.Next == nil {
					break
				}
				// The cursor travels as its token.
				if f.After, err = ordersync.ParseOrderCursor(page.Next.String(), sort); err != nil {
					t.Fatal(err)
				}
			}
			if len(all) != 10 || !slices.Equal(walked, all) {
				t.Errorf("%s: pages %q, want %q", sort, walked, all)
			}
			// Offset pages agree with the listing.
			if got := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: sort, Offset: 3, Limit: 4}); !slices.Equal(got, all[3:7]) {
				t.Errorf("%s offset 3: %q, want %q", sort, got, all[3:7])
			}
		}
	})
}

// TestListOrdersCursorWhileOrdersArrive walks listings while new orders
// arrive between pages, some with the created time and total of the
// orders around the cursor: every order there at the start comes exactly
// once, and no order twice.
func TestListOrdersCursorWhileOrdersArrive(t *testing.T) {
	// Orders arrive between the first arrivalPages pages of each walk, five
	// at a time, with ties enough (a dozen totals, five days, five paid
	// times); thoroughEnv makes it 20 pages.
	arrivalPages := thorough(6, 20)
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		rng := rand.New(rand.NewPCG(7, 9))
		seq := int64(0)
		newOrders := func(prefix string, n int) []string {
			var batch []ordersync.ApplyParams
			var codes []string
			for range n {
				seq++
				code := fmt.Sprintf("%s%03d", prefix, seq)
				codes = append(codes, code)
				status := []ordersync.Status{ordersync.StatusPending, ordersync.StatusPaid}[rng.IntN(2)]
				p := searchOrder{code: code, status: status, day: 10 + rng.IntN(5), total: fmt.Sprintf("%d.%02d", rng.IntN(4), rng.IntN(3))}.params(t, seq)
				p.FetchedAt = time.Date(2026, 10, 20, 0, 0, rng.IntN(5), 0, time.UTC) // paid times that tie
				batch = append(batch, p)
			}
			apply(t, db, batch...)
			return codes
		}
		for _, sort := range ordersync.OrderSorts {
			before := newOrders("w", 40)
			var walked []string
			f := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: sort, Limit: 7}
			for pages := 1; ; pages++ {
				page, err := db.ListOrders(context.Background(), f)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range page.Orders {
					walked = append(walked, m.Order.OrderCode)
				}
				if page.Next == nil {
					break
				}
				f.After = page.Next
				// Orders arrive between the first arrivalPages pages; had
				// they arrived between every page, the walk would end only
				// when it outran them, about 180 pages of each sort later.
				if pages <= arrivalPages {
					newOrders("n", 5)
				}
			}
			seen := map[string]int{}
			for _, c := range walked {
				seen[c]++
				if seen[c] == 2 {
					t.Errorf("%s: %s came twice", sort, c)
				}
			}
			for _, c := range before {
				if seen[c] == 0 {
					t.Errorf("%s: %s, there before the walk, never came", sort, c)
				}
			}
		}
	})
}

// TestSearchBackfill: orders mirrored before migration 00009 become
// searchable and sortable by total once it ran.
func TestSearchBackfill(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadSearchOrders(t, db)
		ctx := context.Background()
		for _, q := range []string{`DELETE FROM order_name_tokens`, `UPDATE orders SET total_key = NULL`, `INSERT INTO search_backfill (pending) VALUES (1)`} {
			if _, err := db.write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if got := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: "jose"}); len(got) != 0 {
			t.Fatalf("found %q before the backfill", got)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if got := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: "jose"}); !slices.Equal(got, []string{"s-e", "s-c", "s-b"}) {
			t.Errorf("after the backfill: %q", got)
		}
		if got := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: ordersync.SortTotalDesc}); !slices.Equal(got, []string{"s-e", "s-b", "s-c", "s-d", "s-a"}) {
			t.Errorf("totals after the backfill: %q", got)
		}
		var pending int
		if err := db.read.Get(&pending, `SELECT COUNT(*) FROM search_backfill`); err != nil || pending != 0 {
			t.Errorf("backfill mark: %d, %v", pending, err)
		}
	})
}

func TestTotalKeyOrdersAsNumbers(t *testing.T) {
	values := []string{"0", "-0.00", "0.001", "-0.001", "17.99", "17.990", "18", "-18", "-17.99", "100", "99.999999999999999999",
		"-99.999999999999999999", "123456789012345678901234", "-123456789012345678901234", "0.000000000000000001", "1e3", "999.5"}
	amounts := make([]ordersync.Amount, len(values))
	for i, v := range values {
		amounts[i] = ordersync.MustAmount(v)
	}
	for i, a := range amounts {
		for j, b := range amounts {
			ka, kb := totalKey(a), totalKey(b)
			want := a.Cmp(b)
			got := 0
			switch {
			case ka < kb:
				got = -1
			case ka > kb:
				got = 1
			}
			if got != want {
				t.Errorf("%s vs %s: keys compare %d, numbers %d (%s, %s)", values[i], values[j], got, want, ka, kb)
			}
		}
	}
	sorted := slices.Clone(values)
	sort.Slice(sorted, func(i, j int) bool {
		return totalKey(ordersync.MustAmount(sorted[i])) < totalKey(ordersync.MustAmount(sorted[j]))
	})
	if sorted[0] != "-123456789012345678901234" || sorted[len(sorted)-1] != "123456789012345678901234" {
		t.Errorf("sorted by key: %q", sorted)
	}
}

// TestSearchPagesInEverySort walks a search's pages by cursor, and by
// offset, in every sort, over buyers with tied created times and totals
// and orders that were never paid: the pages hold what the listing without
// the search holds for the orders found, in its order, none skipped or
// repeated.
func TestSearchPagesInEverySort(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadSearchOrders(t, db)
		var more []ordersync.ApplyParams
		for i := range 9 {
			status := []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized, ordersync.StatusPending}[i%3]
			so := searchOrder{code: fmt.Sprintf("s-j%d", i), status: status, day: 12 + i%2, total: []string{"20.50", "7"}[i%2],
				ref: fmt.Sprintf("jo%d", i)}
			if status != ordersync.StatusPending {
				so.buyer = []string{fmt.Sprintf("Jorge Núñez %d", i), fmt.Sprintf("j%d@example.com", i), fmt.Sprintf("+5037000%04d", i), fmt.Sprintf("J%d", i)}
			}
			more = append(more, so.params(t, int64(40+i)))
		}
		apply(t, db, more...)
		// An order found by an identifier, never paid: it comes among the
		// orders without a paid time.
		apply(t, db, searchOrder{code: "jo", status: ordersync.StatusPending, day: 12, total: "20.50"}.params(t, 60))
		// The listing without a search, in each sort, read once for every
		// search: nothing is written while they run.
		listing := map[ordersync.OrderSort][]string{}
		for _, sort := range ordersync.OrderSorts {
			listing[sort] = listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: sort, Limit: 1000})
		}
		for _, q := range []string{"jo", "NUÑ jor", "jose", "jorge núñez", "núñez 4 jorge"} {
			found := map[string]bool{}
			for _, c := range listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: q, Limit: 1000}) {
				found[c] = true
			}
			for _, sort := range ordersync.OrderSorts {
				var want []string
				for _, c := range listing[sort] {
					if found[c] {
						want = append(want, c)
					}
				}
				var walked []string
				f := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: q, Sort: sort, Limit: 2, Count: true}
				for range 20 {
					page, err := db.ListOrders(context.Background(), f)
					if err != nil {
						t.Fatal(err)
					}
					if page.Total == nil || *page.Total != len(found) {
						t.Errorf("%q %s: total %v, want %d", q, sort, page.Total, len(found))
					}
					for _, m := range page.Orders {
						walked = append(walked, m.Order.OrderCode)
					}
					if page.Next == nil {
						break
					}
					f.After = page.Next
				}
				if !slices.Equal(walked, want) {
					t.Errorf("%q %s: pages %q, want %q", q, sort, walked, want)
				}
				for off := range len(want) {
					got := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: q, Sort: sort, Offset: off, Limit: 2})
					if w := want[off:min(off+2, len(want))]; !slices.Equal(got, w) {
						t.Errorf("%q %s offset %d: %q, want %q", q, sort, off, got, w)
					}
				}
			}
		}
	})
}

// TestSearchFindsAnOrderOnce: an order that a search finds several ways
// (two words of its name beginning with the search's, its name and an
// identifier) is one row of the page and of the count, in every sort, and
// a name whose first word begins one word of the mirror's names alone
// finds the same orders as one that begins several.
func TestSearchFindsAnOrderOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadSearchOrders(t, db)
		apply(t, db,
			searchOrder{code: "s-f", status: ordersync.StatusPaid, day: 16, total: "30", ref: "joaquin7",
				buyer: []string{"Joaquín7 Jorgelina Jorge", "f@example.com", "+50370004444", "joaquin7"}}.params(t, 30),
			searchOrder{code: "s-g", status: ordersync.StatusPaid, day: 17, total: "31",
				buyer: []string{"Jorge Pérez", "g@example.com", "+50370005555", "G555"}}.params(t, 31),
			// Found by its reference only: its name does not match.
			searchOrder{code: "s-h", status: ordersync.StatusPending, day: 18, total: "32", ref: "joaquin7"}.params(t, 32))
		for _, c := range []struct {
			q    string
			want []string
		}{
			{"joaquin7", []string{"s-f", "s-h"}}, // one word of the names; the reference and the authorization code too
			{"JOAQUÍN7 jorge", []string{"s-f"}},  // and a second word that begins two of its words
			{"jorge", []string{"s-f", "s-g"}},    // begins "jorge" and "jorgelina"
			{"jorgelina", []string{"s-f"}},       // begins one word
			{"jorgel joaquin", []string{"s-f"}},  // the first word's prefix begins one word
			{"perez jor", []string{"s-g"}},       // two words
			{"jorge perez", []string{"s-g"}},     //
			{"jorgelinas", []string{}},           // begins no word
			{"+50370004444", []string{"s-f"}},    // an identifier, no name
		} {
			for _, sort := range ordersync.OrderSorts {
				var walked []string
				f := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: c.q, Sort: sort, Limit: 1, Count: true}
				for range 10 {
					page, err := db.ListOrders(context.Background(), f)
					if err != nil {
						t.Fatal(err)
					}
					if page.Total == nil {
						t.Fatalf("%q %s: no total", c.q, sort)
					}
					if *page.Total != len(c.want) {
						t.Errorf("%q %s: total %d, want %d", c.q, sort, *page.Total, len(c.want))
					}
					for _, m := range page.Orders {
						walked = append(walked, m.Order.OrderCode)
					}
					if page.Next == nil {
						break
					}
					f.After = page.Next
				}
				slices.Sort(walked)
				if !slices.Equal(walked, c.want) && !(len(walked) == 0 && len(c.want) == 0) {
					t.Errorf("%q %s: found %q, want %q", c.q, sort, walked, c.want)
				}
			}
		}
	})
}

// TestSearchSkipsNamesAWordMisses: a search with a word that begins no
// word of the buyer names searched (an email's domain) plans no lookup of
// the names, in one store and in every store, and still finds the order
// by its identifier.
func TestSearchSkipsNamesAWordMisses(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		apply(t, db,
			searchOrder{code: "s-f", status: ordersync.StatusPaid, day: 16, total: "30",
				buyer: []string{"Jorge Pérez", "jorge.perez7@example.com", "+50370004444", "F444"}}.params(t, 1),
			searchOrder{code: "s-g", status: ordersync.StatusPaid, day: 17, total: "31",
				buyer: []string{"Jorge Paz", "g@example.com", "+50370005555", "G555"}}.params(t, 2))
		indexNow(t, db)
		for _, c := range []struct {
			q    string
			none bool
			want []string
		}{
			{"JORGE.PEREZ7@EXAMPLE.COM", true, []string{"s-f"}},
			{"jorge zzz", true, []string{}},
			{"jorge pe", false, []string{"s-f"}},
			{"jorge", false, []string{"s-f", "s-g"}},
		} {
			for _, account := range []string{ordersync.DefaultAccount, ""} {
				f := ordersync.OrderFilter{Account: account, Q: c.q}
				var names searchPlan
				err := db.inReadTx(context.Background(), "plan", func(tx *sqlx.Tx) (err error) {
					names, err = db.planSearch(context.Background(), tx, f)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if names.none != c.none {
					t.Errorf("%q in %q: none %v, want %v", c.q, account, names.none, c.none)
				}
				got := listCodes(t, db, f)
				slices.Sort(got)
				if !slices.Equal(got, c.want) {
					t.Errorf("%q in %q: found %q, want %q", c.q, account, got, c.want)
				}
			}
		}
	})
}

// TestNameTokenKeysBackfill: words written before migration 00013 get
// their orders' filtered and sorted values once it ran.
func TestNameTokenKeysBackfill(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		loadSearchOrders(t, db)
		ctx := context.Background()
		for _, q := range []string{`UPDATE order_name_tokens SET status = NULL, store_currency_code = NULL, created_at = NULL, paid_at = NULL, total_key = NULL`,
			`INSERT INTO name_token_backfill (pending) VALUES (1)`} {
			if _, err := db.write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		eur := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: "jose", Currency: "EUR"}
		if got := listCodes(t, db, eur); len(got) != 0 {
			t.Fatalf("found %q before the backfill", got)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if got := listCodes(t, db, eur); !slices.Equal(got, []string{"s-c"}) {
			t.Errorf("euros after the backfill: %q", got)
		}
		byTotal := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: "jose", Sort: ordersync.SortTotalAsc, Statuses: []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized}}
		if got := listCodes(t, db, byTotal); !slices.Equal(got, []string{"s-c", "s-b", "s-e"}) {
			t.Errorf("by total after the backfill: %q", got)
		}
		var pending, empty int
		if err := db.read.Get(&pending, `SELECT COUNT(*) FROM name_token_backfill`); err != nil || pending != 0 {
			t.Errorf("backfill mark: %d, %v", pending, err)
		}
		if err := db.read.Get(&empty, `SELECT COUNT(*) FROM order_name_tokens WHERE created_at IS NULL OR status IS NULL OR total_key IS NULL`); err != nil || empty != 0 {
			t.Errorf("%d words without their order's values: %v", empty, err)
		}
	})
}

// TestListOrdersMatchesBruteForce walks, page by page, the listings of
// random filters, searches and sorts over random orders (names sharing
// words, totals, days and statuses that tie) and compares them with the
// same filter applied in Go to every order: whichever plan a dialect's
// query takes, it selects and orders exactly these.
func TestListOrdersMatchesBruteForce(t *testing.T) {
	firsts := []string{"José", "Josefa", "María", "Ana", "Ángel", "Jorge"}
	lasts := []string{"Peña", "Núñez", "Pérez", "Ruiz", "Anaya"}
	statuses := []ordersync.Status{ordersync.StatusPending, ordersync.StatusPaid, ordersync.StatusCancelled, ordersync.StatusFinalized}
	totals := []string{"1.00", "2.00", "9.99", "20.50", "100", "1000"}
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(20, 20))
		var batch []ordersync.ApplyParams
		for i := range 160 {
			so := searchOrder{code: fmt.Sprintf("b-%03d", i), status: statuses[rng.IntN(len(statuses))], day: 1 + rng.IntN(20),
				total: totals[rng.IntN(len(totals))], currency: []string{"USD", "EUR"}[rng.IntN(2)]}
			if i%30 == 0 { // found by its reference and, some, by name too
				so.ref = "jose"
			}
			if so.status.IsPaidState() {
				name := firsts[rng.IntN(len(firsts))] + " " + lasts[rng.IntN(len(lasts))]
				if rng.IntN(3) == 0 {
					name += " " + lasts[rng.IntN(len(lasts))]
				}
				so.buyer = []string{name, fmt.Sprintf("b%d@example.com", i), fmt.Sprintf("+5037%07d", i), fmt.Sprintf("AU%d", i%50)}
			}
			// Paid times from the fetch's seq: several orders share one.
			batch = append(batch, so.params(t, int64(1+rng.IntN(60))))
		}
		apply(t, db, batch...)
		all, err := db.ListOrders(ctx, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var ids []struct {
			ID   int64  `db:"id"`
			Code string `db:"order_code"`
		}
		if err := db.read.SelectContext(ctx, &ids, `SELECT id, order_code FROM orders`); err != nil {
			t.Fatal(err)
		}
		row := map[string]int64{}
		for _, r := range ids {
			row[r.Code] = r.ID
		}
		matches := func(m *ordersync.MirroredOrder, f ordersync.OrderFilter) bool {
			o := m.Order
			created, paid := o.Created.Time, m.Sync.PaidAt
			switch {
			case len(f.Statuses) > 0 && !slices.Contains(f.Statuses, o.OrderStatus),
				!f.CreatedFrom.IsZero() && created.Before(f.CreatedFrom),
				!f.CreatedTo.IsZero() && !created.Before(f.CreatedTo),
				!f.PaidFrom.IsZero() && (paid == nil || paid.Before(f.PaidFrom)),
				!f.PaidTo.IsZero() && (paid == nil || !paid.Before(f.PaidTo)),
				f.Currency != "" && o.Store.CurrencyCode != f.Currency,
				f.MinTotal != nil && totalKey(o.Total) < totalKey(*f.MinTotal),
				f.MaxTotal != nil && totalKey(o.Total) > totalKey(*f.MaxTotal):
				return false
			}
			if f.Q == "" {
				return true
			}
			var buyer ordersync.Buyer
			auth := ""
			if o.Payment != nil {
				auth = o.Payment.AuthorizationCode
				if o.Payment.Buyer != nil {
					buyer = *o.Payment.Buyer
				}
			}
			for _, id := range []string{o.OrderCode, string(o.OrderID), auth} {
				if id != "" && id == f.Q {
					return true
				}
			}
			key := strings.ToLower(f.Q)
			if email := strings.ToLower(buyer.Email); email != "" && email == key {
				return true
			}
			if ref := strings.ToLower(o.OrderReference); ref != "" && strings.HasPrefix(ref, key) {
				return true
			}
			if phone := ordersync.PhoneKey(buyer.Phone, o.Store.CountryCode); phone != "" && slices.Contains(ordersync.PhoneSearchKeys(f.Q, []string{o.Store.CountryCode}), phone) {
				return true
			}
			if a, ok := ordersync.SearchAmount(f.Q); ok && o.Total.Cmp(a) == 0 {
				return true
			}
			words, name := ordersync.NameTokens(f.Q), ordersync.NameTokens(buyer.Name)
			for _, w := range words {
				if !slices.ContainsFunc(name, func(n string) bool { return strings.HasPrefix(n, w) }) {
					return false
				}
			}
			return len(words) > 0
		}
		// key is the order's sort value as its column orders it, "" when it
		// has none.
		key := func(m *ordersync.MirroredOrder, s ordersync.OrderSort) string {
			switch s.Key() {
			case "paid":
				if m.Sync.PaidAt == nil {
					return ""
				}
				return m.Sync.PaidAt.UTC().Format(time.RFC3339Nano)
			case "total":
				return totalKey(m.Order.Total)
			}
			return m.Order.Created.UTC().Format(time.RFC3339Nano)
		}
		want := func(f ordersync.OrderFilter) []string {
			sort := cmp.Or(f.Sort, ordersync.SortCreatedDesc)
			var found []*ordersync.MirroredOrder
			for _, m := range all.Orders {
				if matches(m, f) {
					found = append(found, m)
				}
			}
			slices.SortFunc(found, func(a, b *ordersync.MirroredOrder) int {
				ka, kb := key(a, sort), key(b, sort)
				if (ka == "") != (kb == "") { // those without a value last
					return cmp.Compare(len(kb), len(ka))
				}
				c := cmp.Or(cmp.Compare(ka, kb), cmp.Compare(row[a.Order.OrderCode], row[b.Order.OrderCode]))
				if sort.Desc() {
					return -c
				}
				return c
			})
			codes := []string{}
			for _, m := range found {
				codes = append(codes, m.Order.OrderCode)
			}
			return codes
		}
		day := func(d int) time.Time { return time.Date(2026, 10, d, 0, 0, 0, 0, time.UTC) }
		paid := func(s int) time.Time { return time.Date(2026, 10, 10, 18, 5, s, 0, time.UTC) }
		amount := func(s string) *ordersync.Amount { a := ordersync.MustAmount(s); return &a }
		queries := []string{"", "", "", "jose", "jos", "JOSÉ peña", "núñez", "ana", "an", "pérez ruiz", "jorge anaya", "b-007", "AU3", "b12@example.com", "zz",
			// A reference's beginning in any case, an email in capitals, a
			// phone as a caller says it, an amount as written or not.
			"JOS", "B12@Example.COM", "7000-0030", "(503) 7000.0060", "+503 7000 0090", "20.5", "9.99", "100.00",
			// Words that each begin one word of the names (PostgreSQL merges
			// their walks by created time), a later word that begins
			// several or one, one word twice, three words.
			"ruiz peña", "maría pe", "ana ruiz pen", "ruiz ruiz", "jorge núñez anaya", "ángel josé"}
		// Every search and every sort, each several times: the filters take
		// them in turn (their counts have no common factor, so the pairs
		// vary), the rest of each filter at random. thoroughEnv runs 150.
		filters := thorough(2*len(queries)+2, 150)
		seenQ, seenSort := map[string]bool{}, map[ordersync.OrderSort]bool{}
		for i := range filters {
			f := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Q: queries[i%len(queries)],
				Sort: ordersync.OrderSorts[i%len(ordersync.OrderSorts)], Limit: 1 + rng.IntN(12)}
			seenQ[f.Q], seenSort[f.Sort] = true, true
			if rng.IntN(3) == 0 {
				f.Statuses = []ordersync.Status{statuses[rng.IntN(len(statuses))]}
				if rng.IntN(2) == 0 {
					f.Statuses = append(f.Statuses, statuses[rng.IntN(len(statuses))])
				}
			}
			if rng.IntN(3) == 0 {
				from := 1 + rng.IntN(20)
				f.CreatedFrom, f.CreatedTo = day(from), day(from+1+rng.IntN(7))
			}
			if rng.IntN(5) == 0 {
				from := rng.IntN(60)
				f.PaidFrom, f.PaidTo = paid(from), paid(from+1+rng.IntN(20))
			}
			if rng.IntN(4) == 0 {
				f.Currency = "EUR"
			}
			if rng.IntN(3) == 0 {
				f.MaxTotal = amount(totals[rng.IntN(len(totals))])
			}
			if rng.IntN(4) == 0 {
				f.MinTotal = amount(totals[rng.IntN(len(totals))])
			}
			expected := want(f)
			var walked []string
			page := f
			for range len(expected) + 2 {
				p, err := db.ListOrders(ctx, page)
				if err != nil {
					t.Fatalf("filter %d %+v: %v", i, f, err)
				}
				for _, m := range p.Orders {
					walked = append(walked, m.Order.OrderCode)
				}
				if p.Next == nil {
					break
				}
				page.After = p.Next
			}
			if !slices.Equal(walked, expected) {
				t.Errorf("filter %d (q %q, sort %s, statuses %v, created %v–%v, paid %v–%v, currency %q, total %v–%v, limit %d):\n got %q\nwant %q",
					i, f.Q, f.Sort, f.Statuses, f.CreatedFrom, f.CreatedTo, f.PaidFrom, f.PaidTo, f.Currency, f.MinTotal, f.MaxTotal, f.Limit, walked, expected)
			}
			if off := rng.IntN(5); off < len(expected) {
				f.Offset = off
				if got, w := listCodes(t, db, f), expected[off:min(off+f.Limit, len(expected))]; !slices.Equal(got, w) {
					t.Errorf("filter %d offset %d: %q, want %q", i, off, got, w)
				}
			}
		}
		for _, q := range queries {
			if !seenQ[q] {
				t.Errorf("no filter searched %q", q)
			}
		}
		for _, sort := range ordersync.OrderSorts {
			if !seenSort[sort] {
				t.Errorf("no filter sorted by %s", sort)
			}
		}
	})
}
