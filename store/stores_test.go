package store

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// twoStores mirrors the orders of two stores, each an account: sv sells in
// USD in America/El_Salvador, md in EUR in Europe/Madrid. Each order is
// paid a minute after its creation when paid.
func twoStores(t *testing.T, db *DB) {
	t.Helper()
	type o struct {
		account, code string
		status        ordersync.Status
		total         string
		created       string
		email         string
	}
	orders := []o{
		{"sv", "s1", ordersync.StatusPaid, "10.00", "2026-11-02T12:00:00Z", "ana@sv.example"},
		{"sv", "s2", ordersync.StatusPending, "5.00", "2026-11-02T13:00:00Z", ""},
		// 22:00 on the 2nd in El Salvador, 05:00 on the 3rd in Madrid.
		{"sv", "s3", ordersync.StatusFinalized, "7.25", "2026-11-03T04:00:00Z", "jose@example.com"},
		{"md", "m1", ordersync.StatusPaid, "20.00", "2026-11-02T10:00:00Z", "marta@md.example"},
		// 23:30 on the 2nd in Madrid, 16:30 on the 2nd in El Salvador.
		{"md", "m2", ordersync.StatusPaid, "3.50", "2026-11-02T22:30:00Z", "jose@example.com"},
	}
	zones := map[string][2]string{"sv": {"USD", "America/El_Salvador"}, "md": {"EUR", "Europe/Madrid"}}
	for i, x := range orders {
		doc := orderDoc(t, x.code, 7000+i, x.status, func(doc map[string]any) {
			doc["created"] = x.created
			doc["total"] = json.Number(x.total)
			st := doc["store"].(map[string]any)
			st["currencyCode"], st["timezone"] = zones[x.account][0], zones[x.account][1]
			if p, ok := doc["payment"].(map[string]any); ok {
				p["buyer"].(map[string]any)["email"] = x.email
			}
		})
		created, err := time.Parse(time.RFC3339, x.created)
		if err != nil {
			t.Fatal(err)
		}
		apply(t, db, ordersync.ApplyParams{Account: x.account, Order: doc, Seq: int64(i + 1),
			FetchedAt: created.Add(time.Minute), Cause: ordersync.CauseTrack})
	}
}

// TestStoreScopedQueries: every read of the back office that takes a
// store reads that store's orders alone, and the listing with no account
// reads every store's; a store's daily totals are in its own zone
// without another.
func TestStoreScopedQueries(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		twoStores(t, db)
		codes := func(f ordersync.OrderFilter) []string {
			t.Helper()
			f.Count = true
			page, err := db.ListOrders(ctx, f)
			if err != nil {
				t.Fatalf("ListOrders(%+v): %v", f, err)
			}
			var out []string
			for _, m := range page.Orders {
				out = append(out, m.Account+"/"+m.Order.OrderCode)
			}
			slices.Sort(out)
			if page.Total == nil || *page.Total != len(out) {
				t.Errorf("ListOrders(%+v): count %v for %d orders", f, page.Total, len(out))
			}
			return out
		}
		for _, tc := range []struct {
			f    ordersync.OrderFilter
			want []string
		}{
			{ordersync.OrderFilter{Account: "sv"}, []string{"sv/s1", "sv/s2", "sv/s3"}},
			{ordersync.OrderFilter{Account: "md"}, []string{"md/m1", "md/m2"}},
			{ordersync.OrderFilter{}, []string{"md/m1", "md/m2", "sv/s1", "sv/s2", "sv/s3"}},
			{ordersync.OrderFilter{Currency: "EUR"}, []string{"md/m1", "md/m2"}},
			{ordersync.OrderFilter{Account: "sv", Currency: "EUR"}, nil},
			{ordersync.OrderFilter{Q: "jose@example.com"}, []string{"md/m2", "sv/s3"}},
			{ordersync.OrderFilter{Account: "md", Q: "jose@example.com"}, []string{"md/m2"}},
			{ordersync.OrderFilter{Q: "josé"}, []string{"md/m1", "md/m2", "sv/s1", "sv/s3"}},
			{ordersync.OrderFilter{Account: "sv", Q: "jose pe"}, []string{"sv/s1", "sv/s3"}},
			{ordersync.OrderFilter{Statuses: []ordersync.Status{ordersync.StatusPaid}}, []string{"md/m1", "md/m2", "sv/s1"}},
		} {
			if got := codes(tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("ListOrders(%+v) = %v; want %v", tc.f, got, tc.want)
			}
		}
		// An export reads what the listing does, store by store.
		for account, want := range map[string][]string{"sv": {"sv/s1", "sv/s2", "sv/s3"}, "md": {"md/m1", "md/m2"},
			"": {"md/m1", "md/m2", "sv/s1", "sv/s2", "sv/s3"}} {
			var got []string
			if err := db.ExportOrders(ctx, ordersync.ExportParams{Filter: ordersync.OrderFilter{Account: account}, BatchSize: 2},
				func(batch []ordersync.ExportedOrder) error {
					for _, e := range batch {
						got = append(got, e.Account+"/"+e.Order.OrderCode)
					}
					return nil
				}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("ExportOrders(account %q) = %v; want %v", account, got, want)
			}
		}
		for account, want := range map[string]string{"sv": "America/El_Salvador", "md": "Europe/Madrid", "nobody": ""} {
			if got, err := db.StoreTimeZone(ctx, account); err != nil || got != want {
				t.Errorf("StoreTimeZone(%s) = %q, %v; want %q", account, got, err, want)
			}
		}
		// Each store's days are its own zone's: s3 is paid on the 2nd in
		// El Salvador, m2 on the 2nd in Madrid, though both are the 3rd
		// or the 2nd in UTC.
		from, _ := ordersync.ParseDate("2026-11-02")
		to, _ := ordersync.ParseDate("2026-11-04")
		paid := func(account string, loc *time.Location) map[string]string {
			t.Helper()
			got, err := db.DailyTotals(ctx, ordersync.DailyTotalsParams{Account: account, From: from, To: to, Location: loc})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{"tz": got.TZ}
			for _, d := range got.Days {
				if d.Paid.Count > 0 {
					out[d.Date+" "+d.Currency] = d.Paid.Total
				}
			}
			return out
		}
		for _, tc := range []struct {
			account string
			loc     *time.Location
			want    map[string]string
		}{
			{"sv", nil, map[string]string{"tz": "America/El_Salvador", "2026-11-02 USD": "17.25"}},
			{"md", nil, map[string]string{"tz": "Europe/Madrid", "2026-11-02 EUR": "23.50"}},
			{"sv", time.UTC, map[string]string{"tz": "UTC", "2026-11-02 USD": "10.00", "2026-11-03 USD": "7.25"}},
			{"md", time.UTC, map[string]string{"tz": "UTC", "2026-11-02 EUR": "23.50"}},
		} {
			if got := paid(tc.account, tc.loc); !maps.Equal(got, tc.want) {
				t.Errorf("daily paid of %s in %v = %v; want %v", tc.account, tc.loc, got, tc.want)
			}
		}
	})
}
