package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// exportCodes runs an export and returns the order codes in the order it
// gave them, and the size of each batch.
func exportCodes(t *testing.T, db *DB, params ordersync.ExportParams) ([]string, []int) {
	t.Helper()
	var codes []string
	var sizes []int
	err := db.ExportOrders(context.Background(), params, func(batch []ordersync.ExportedOrder) error {
		sizes = append(sizes, len(batch))
		for _, o := range batch {
			codes = append(codes, o.Order.OrderCode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ExportOrders: %v", err)
	}
	return codes, sizes
}

func TestExportOrdersKeyset(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		created := func(v any) func(map[string]any) {
			return func(doc map[string]any) {
				if v == nil {
					delete(doc, "created")
					return
				}
				doc["created"] = v
			}
		}
		// Applied in this order, so row ids follow it: ties in creation time
		// are broken by row id (newest row first, as the listing does), and
		// orders without a creation time come last.
		specs := []struct {
			code    string
			created any
			status  ordersync.Status
		}{
			{"a", "2026-10-10T12:00:00.000Z", ordersync.StatusPaid},
			{"b", "2026-10-12T12:00:00.000Z", ordersync.StatusPending},
			{"c", "2026-10-12T12:00:00.000Z", ordersync.StatusPaid},
			{"d", nil, ordersync.StatusPaid},
			{"e", "2026-10-12T12:00:00.000Z", ordersync.StatusCancelled},
			{"f", "2026-10-11T08:30:00.123Z", ordersync.StatusPaid},
			{"g", nil, ordersync.StatusPending},
			{"h", "2026-10-13T00:00:00.000Z", ordersync.StatusPaid},
		}
		for i, s := range specs {
			apply(t, db, fetched(orderDoc(t, s.code, i+1, s.status, created(s.created)), int64(i+1)))
		}
		other := fetched(orderDoc(t, "z", 99, ordersync.StatusPaid), 99)
		other.Account = "other"
		apply(t, db, other)
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "unfetched"}); err != nil {
			t.Fatal(err)
		}

		all := []string{"h", "e", "c", "b", "f", "a", "g", "d"}
		for _, size := range []int{1, 2, 3, 8, 1000} {
			codes, sizes := exportCodes(t, db, ordersync.ExportParams{Filter: ordersync.OrderFilter{Account: ordersync.DefaultAccount}, BatchSize: size})
			if !slices.Equal(codes, all) {
				t.Errorf("batch size %d: %q, want %q", size, codes, all)
			}
			for _, n := range sizes {
				if n > size || n == 0 {
					t.Errorf("batch size %d: a batch of %d (%v)", size, n, sizes)
				}
			}
		}
		for _, tt := range []struct {
			name   string
			filter ordersync.OrderFilter
			want   []string
		}{
			{"status", ordersync.OrderFilter{Account: ordersync.DefaultAccount, Statuses: []ordersync.Status{ordersync.StatusPaid}}, []string{"h", "c", "f", "a", "d"}},
			{"since leaves out orders without a creation time", ordersync.OrderFilter{Account: ordersync.DefaultAccount, Since: time.Date(2026, 10, 11, 8, 30, 0, 123e6, time.UTC)}, []string{"h", "e", "c", "b", "f"}},
			{"the listing's sort", ordersync.OrderFilter{Account: ordersync.DefaultAccount, Sort: ordersync.SortCreatedAsc}, []string{"a", "f", "b", "c", "e", "h", "d", "g"}},
			{"other account", ordersync.OrderFilter{Account: "other"}, []string{"z"}},
			{"limit, offset and a cursor do not apply", ordersync.OrderFilter{Account: ordersync.DefaultAccount, Limit: 1, Offset: 3,
				After: &ordersync.OrderCursor{Sort: ordersync.SortCreatedDesc, Row: 1}}, all},
		} {
			if codes, _ := exportCodes(t, db, ordersync.ExportParams{Filter: tt.filter, BatchSize: 2}); !slices.Equal(codes, tt.want) {
				t.Errorf("%s: %q, want %q", tt.name, codes, tt.want)
			}
		}

		// Line items and status changes come only when asked for.
		var plain, full []ordersync.ExportedOrder
		collect := func(dst *[]ordersync.ExportedOrder) func([]ordersync.ExportedOrder) error {
			return func(b []ordersync.ExportedOrder) error { *dst = append(*dst, b...); return nil }
		}
		filter := ordersync.OrderFilter{Account: ordersync.DefaultAccount, Statuses: []ordersync.Status{ordersync.StatusCancelled}}
		if err := db.ExportOrders(ctx, ordersync.ExportParams{Filter: filter}, collect(&plain)); err != nil {
			t.Fatal(err)
		}
		if err := db.ExportOrders(ctx, ordersync.ExportParams{Filter: filter, LineItems: true, StatusChanges: true}, collect(&full)); err != nil {
			t.Fatal(err)
		}
		if len(plain) != 1 || len(plain[0].Order.LineItems) != 0 || plain[0].StatusChanges != nil || plain[0].Order.Total.String() != "15.89" {
			t.Errorf("without details: %+v", plain)
		}
		if len(full) != 1 || len(full[0].Order.LineItems) != 2 || full[0].Order.LineItems[1].PromoPrice == nil {
			t.Fatalf("with details: %+v", full)
		}
		if full[0].Sync.StatusChangedAt == nil || full[0].Sync.PaidAt != nil {
			t.Errorf("a cancelled order's times: paid %v, status changed %v", full[0].Sync.PaidAt, full[0].Sync.StatusChangedAt)
		}
		var paid []ordersync.ExportedOrder
		if err := db.ExportOrders(ctx, ordersync.ExportParams{Filter: ordersync.OrderFilter{Account: "other"}}, collect(&paid)); err != nil {
			t.Fatal(err)
		}
		if len(paid) != 1 || paid[0].Sync.PaidAt == nil {
			t.Errorf("a paid order's export has no paid time: %+v", paid)
		}
		changes := full[0].StatusChanges
		if len(changes) != 1 || changes[0].From != "" || changes[0].To != ordersync.StatusCancelled || changes[0].Cause != ordersync.CauseWebhook || changes[0].At.IsZero() {
			t.Errorf("status changes of e: %+v", changes)
		}
	})
}

func TestExportStatusChangesInOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		apply(t, db, fetched(orderDoc(t, "s", 1, ordersync.StatusPending), 1))
		apply(t, db, fetched(orderDoc(t, "s", 1, ordersync.StatusPaid), 2))
		apply(t, db, fetched(orderDoc(t, "s", 1, ordersync.StatusCancelled), 3))
		var got []string
		err := db.ExportOrders(context.Background(), ordersync.ExportParams{StatusChanges: true}, func(b []ordersync.ExportedOrder) error {
			for _, o := range b {
				for _, c := range o.StatusChanges {
					got = append(got, fmt.Sprintf("%s>%s@%s", c.From, c.To, c.At.Format(time.TimeOnly)))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{">PENDING@18:05:01", "PENDING>PAID@18:05:02", "PAID>CANCELLED@18:05:03"}
		if !slices.Equal(got, want) {
			t.Errorf("status changes %q, want %q", got, want)
		}
	})
}

// An export stops at its callback's error and at the context's end, and
// reads nothing more.
func TestExportOrdersStops(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		for i := range 6 {
			apply(t, db, fetched(orderDoc(t, fmt.Sprintf("o%d", i), i+1, ordersync.StatusPaid), int64(i+1)))
		}
		boom := errors.New("boom")
		calls := 0
		err := db.ExportOrders(context.Background(), ordersync.ExportParams{BatchSize: 2}, func([]ordersync.ExportedOrder) error {
			calls++
			return boom
		})
		if !errors.Is(err, boom) || calls != 1 {
			t.Errorf("after the callback's error: %v, %d calls", err, calls)
		}
		ctx, cancel := context.WithCancel(context.Background())
		calls = 0
		err = db.ExportOrders(ctx, ordersync.ExportParams{BatchSize: 2}, func([]ordersync.ExportedOrder) error {
			calls++
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("after the context's end: %v, %d calls", err, calls)
		}
	})
}

func TestStoreTimeZone(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		if zone, err := db.StoreTimeZone(ctx, ordersync.DefaultAccount); err != nil || zone != "" {
			t.Fatalf("empty mirror: %q, %v", zone, err)
		}
		apply(t, db, fetched(orderDoc(t, "a", 1, ordersync.StatusPending), 1))
		apply(t, db, fetched(orderDoc(t, "b", 2, ordersync.StatusPending, func(doc map[string]any) {
			doc["store"].(map[string]any)["timezone"] = "Europe/Madrid"
		}), 2))
		if zone, err := db.StoreTimeZone(ctx, ordersync.DefaultAccount); err != nil || zone != "Europe/Madrid" {
			t.Errorf("StoreTimeZone = %q, %v; want the latest order's Europe/Madrid", zone, err)
		}
		if zone, _ := db.StoreTimeZone(ctx, "other"); zone != "" {
			t.Errorf("another account's zone: %q", zone)
		}
	})
}

// TestExportIsTheListing holds an export to the listing: for every filter
// and sort, the orders an export gives, batch after batch, are the orders
// every page of ListOrders gives, in the same order.
func TestExportIsTheListing(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 10, d, 0, 0, 0, 0, time.UTC) }
	amount := func(s string) *ordersync.Amount { a := ordersync.MustAmount(s); return &a }
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		loadSearchOrders(t, db)
		// More orders than a batch or a page, with ties in every sort key.
		var more []ordersync.ApplyParams
		for i := range 23 {
			so := searchOrder{code: fmt.Sprintf("m-%02d", i), status: []ordersync.Status{ordersync.StatusPaid, ordersync.StatusPending, ordersync.StatusFinalized}[i%3],
				day: 10 + i%5, total: []string{"20.50", "100", "7.25"}[i%3], buyer: []string{"José Núñez", fmt.Sprintf("m%d@example.com", i), "+503700", "M1"}}
			if i%4 == 0 {
				so.currency = "EUR"
			}
			more = append(more, so.params(t, int64(100+i)))
		}
		apply(t, db, more...)

		def := func(f ordersync.OrderFilter) ordersync.OrderFilter { f.Account = ordersync.DefaultAccount; return f }
		filters := []ordersync.OrderFilter{
			def(ordersync.OrderFilter{}),
			def(ordersync.OrderFilter{Q: "jose", PaidFrom: time.Date(2026, 10, 10, 18, 5, 3, 0, time.UTC), Currency: "USD", MinTotal: amount("20.5")}),
			def(ordersync.OrderFilter{Q: "JOSÉ", Statuses: []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized}}),
			def(ordersync.OrderFilter{CreatedFrom: day(11), CreatedTo: day(14), MaxTotal: amount("100")}),
			def(ordersync.OrderFilter{Since: day(12), Currency: "EUR"}),
			def(ordersync.OrderFilter{PaidTo: time.Date(2026, 10, 10, 18, 7, 0, 0, time.UTC)}),
			{Account: "other"},
		}
		for _, f := range filters {
			for _, sort := range ordersync.OrderSorts {
				f.Sort = sort
				var listed []string
				page := f
				page.Limit = 4
				for {
					p, err := db.ListOrders(ctx, page)
					if err != nil {
						t.Fatalf("ListOrders(%+v): %v", page, err)
					}
					for _, m := range p.Orders {
						listed = append(listed, m.Order.OrderCode)
					}
					if p.Next == nil {
						break
					}
					page.After = p.Next
				}
				exported, _ := exportCodes(t, db, ordersync.ExportParams{Filter: f, BatchSize: 3})
				if !slices.Equal(exported, listed) {
					t.Errorf("filter %+v, sort %s:\nexport  %q\nlisting %q", f, sort, exported, listed)
				}
			}
		}
		// The filter that the API test also holds selects something, so the
		// comparison above is not between two empty lists.
		if codes, _ := exportCodes(t, db, ordersync.ExportParams{Filter: filters[1]}); len(codes) < 2 {
			t.Errorf("q, paidFrom, currency and minTotal export %q: want several orders", codes)
		}
		err := db.ExportOrders(ctx, ordersync.ExportParams{Filter: def(ordersync.OrderFilter{Since: day(1), CreatedFrom: day(1)})},
			func([]ordersync.ExportedOrder) error { return nil })
		if err == nil {
			t.Error("Since with CreatedFrom: no error")
		}
	})
}

// Each order of an export has its own line items and status changes, in
// their order, whatever the batch size: the batch's lines and changes are
// read in one query each and handed to their orders by row.
func TestExportLinesAndChangesAcrossBatches(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		want := map[string]string{}
		wantChanges := map[string]string{}
		statuses := []ordersync.Status{ordersync.StatusPending, ordersync.StatusPaid, ordersync.StatusCancelled}
		seq := int64(0)
		for i := range 7 {
			code := fmt.Sprintf("o%d", i)
			lines := make([]any, i%5) // 0 to 4 lines
			for j := range lines {
				line := map[string]any{"productId": json.Number(strconv.Itoa(100*i + j)), "sku": fmt.Sprintf("S%d-%d", i, j),
					"name": fmt.Sprintf("item %d of %s", j, code), "price": json.Number(fmt.Sprintf("%d.25", j+1)),
					"quantity": json.Number(strconv.Itoa(j + 1)), "subTotal": json.Number(fmt.Sprintf("%d.50", j+1))}
				if j%2 == 1 {
					line["promoPrice"] = json.Number("0.99")
				}
				lines[j] = line
			}
			edit := func(doc map[string]any) { doc["lineItems"] = lines }
			// Order i goes through i%3+1 statuses.
			var doc *ordersync.Order
			for _, s := range statuses[:i%3+1] {
				seq++
				doc = orderDoc(t, code, i+1, s, edit)
				apply(t, db, fetched(doc, seq))
			}
			if len(doc.LineItems) != len(lines) {
				t.Fatalf("%s has %d line items, want %d", code, len(doc.LineItems), len(lines))
			}
			want[code] = lineItemsText(doc.LineItems)
			wantChanges[code] = fmt.Sprint(statuses[:i%3+1])
		}
		for _, size := range []int{1, 2, 3, 1000} {
			got, gotChanges := map[string]string{}, map[string]string{}
			err := db.ExportOrders(context.Background(), ordersync.ExportParams{LineItems: true, StatusChanges: true, BatchSize: size},
				func(batch []ordersync.ExportedOrder) error {
					for _, o := range batch {
						got[o.Order.OrderCode] = lineItemsText(o.Order.LineItems)
						var to []ordersync.Status
						for _, c := range o.StatusChanges {
							to = append(to, c.To)
						}
						gotChanges[o.Order.OrderCode] = fmt.Sprint(to)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			for code, w := range want {
				if got[code] != w {
					t.Errorf("batch size %d: %s's line items\n%s\nwant\n%s", size, code, got[code], w)
				}
				if gotChanges[code] != wantChanges[code] {
					t.Errorf("batch size %d: %s's status changes %s, want %s", size, code, gotChanges[code], wantChanges[code])
				}
			}
		}
	})
}

// lineItemsText writes line items one a line, every field in it.
func lineItemsText(items []ordersync.LineItem) string {
	var b strings.Builder
	for _, it := range items {
		promo := "-"
		if it.PromoPrice != nil {
			promo = it.PromoPrice.String()
		}
		fmt.Fprintf(&b, "%s %s %q %s %s %d %s %s\n", it.ProductID, it.SKU, it.Name, it.Price, promo, it.Quantity, it.ImageURL, it.SubTotal)
	}
	return b.String()
}
