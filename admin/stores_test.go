package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/store"
)

// mirrorStores writes the orders of two stores, each an account: "sv"
// sells in USD in America/El_Salvador, "md" in EUR in Europe/Madrid. Each
// order is account, code, statuses, total and created time: the statuses
// as fetched one after another (PENDING>PAID>CANCELLED), the first a
// minute after its creation, each next an hour later. A paid order keeps
// its payment when it is cancelled afterwards; a status marked * carries
// one too (CANCELLED*: a payment reversed before any fetch saw it).
func mirrorStores(t *testing.T, db *store.DB, orders ...[5]string) {
	t.Helper()
	zones := map[string][2]string{"sv": {"USD", "America/El_Salvador"}, "md": {"EUR", "Europe/Madrid"}}
	for i, o := range orders {
		paid := false
		for step, status := range strings.Split(o[2], ">") {
			payment := "null"
			evidence := strings.HasSuffix(status, "*")
			status = strings.TrimSuffix(status, "*")
			if paid = paid || evidence || status == "PAID" || status == "FINALIZED"; paid {
				payment = fmt.Sprintf(`{"authorizationCode":"A%d","buyer":{"name":"Buyer %d","email":"b%d@example.com","phone":"+50370000%03d"}}`, i, i, i, i)
			}
			doc := fmt.Sprintf(`{"orderId":"%d","orderCode":%q,"orderReference":"ref-%s","name":"Pedido","orderStatus":%q,
"subtotal":%s,"totalDetails":{"shippingAmount":0,"discountAmount":0,"surchargeAmount":0},"total":%s,
"store":{"name":%q,"currencyCode":%q,"timezone":%q},"payment":%s,"created":%q}`,
				6000+i, o[1], o[1], status, o[3], o[3], o[0], zones[o[0]][0], zones[o[0]][1], payment, o[4])
			order, err := ordersync.DecodeOrder([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			seq, err := db.AllocateFetchSeq(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ApplyOrders(context.Background(), []ordersync.ApplyParams{{Account: o[0], Order: order,
				Seq: seq, FetchedAt: order.Created.Time.Add(time.Minute + time.Duration(step)*time.Hour), Cause: ordersync.CauseTrack}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// storesServer is the console and API over two stores' mirror, signed in
// as a viewer.
func storesServer(t *testing.T) (*browser, *store.DB) {
	t.Helper()
	base, db := storesBase(t)
	b := newBrowser(t, base)
	b.signIn("eve-token")
	return b, db
}

// storesBase starts the console and API over two stores' mirror and
// returns its address.
func storesBase(t *testing.T) (string, *store.DB) {
	t.Helper()
	db := openTestDB(t)
	mirrorStores(t, db,
		[5]string{"sv", "s1", "PAID", "10.00", "2026-11-02T12:00:00.000Z"},
		[5]string{"sv", "s2", "PENDING", "5.00", "2026-11-02T13:00:00.000Z"},
		// 22:00 on the 2nd in El Salvador, 05:00 on the 3rd in Madrid.
		[5]string{"sv", "s3", "PAID", "7.25", "2026-11-03T04:00:00.000Z"},
		[5]string{"md", "m1", "PAID", "20.00", "2026-11-02T10:00:00.000Z"},
		// 23:30 on the 2nd in Madrid.
		[5]string{"md", "m2", "PAID", "3.50", "2026-11-02T22:30:00.000Z"})
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Account, c.Stores = "sv", []string{"sv", "md"}
		c.Reports, c.Exports, c.DeadLetters, c.Clock = db, db, db, func() time.Time { return now }
	})
	for _, account := range []string{"sv", "md", "ghost"} {
		if _, err := db.AddDeadLetter(context.Background(), ordersync.DeadLetter{MsgID: "m-" + account, Account: account,
			Reason: ordersync.ReasonRejected, Attempts: 1, LastError: "the error of " + account,
			Body: []byte(`{"type":"Created"}`), CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	return base, db
}

// TestStoreChoiceAPI: the API's listing, order, export and daily totals
// take the store as account: one store's orders, every store's with *,
// and an unknown store is a 400 naming the known ones, never an empty
// answer.
func TestStoreChoiceAPI(t *testing.T) {
	t.Parallel()
	b, _ := storesServer(t)
	b.header.Set("Authorization", "Bearer eve-token")
	codes := func(path string) []string {
		t.Helper()
		resp, body := b.do("GET", path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		var list struct {
			Orders []struct{ Account, OrderCode string }
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range list.Orders {
			out = append(out, o.Account+"/"+o.OrderCode)
		}
		return out
	}
	for path, want := range map[string]string{
		"/v1/orders":                              "[sv/s3 sv/s2 sv/s1]",
		"/v1/orders?account=md":                   "[md/m2 md/m1]",
		"/v1/orders?account=*":                    "[sv/s3 md/m2 sv/s2 sv/s1 md/m1]",
		"/v1/orders?account=*&q=b4%40example.com": "[md/m2]",
	} {
		if got := fmt.Sprint(codes(path)); got != want {
			t.Errorf("GET %s: %s, want %s", path, got, want)
		}
	}
	for _, path := range []string{"/v1/orders?account=madrid", "/v1/orders/m1?account=madrid", "/v1/orders/m1?account=*",
		"/v1/exports/orders?account=madrid", "/v1/reports/daily?from=2026-11-01&to=2026-11-03&account=madrid"} {
		resp, body := b.do("GET", path, nil)
		var p api.Problem
		_ = json.Unmarshal([]byte(body), &p)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(fmt.Sprint(p.Errors["account"]), "known stores: sv, md") {
			t.Errorf("GET %s: %d %s; want 400 naming the known stores", path, resp.StatusCode, body)
		}
	}
	if resp, body := b.do("GET", "/v1/orders/m1?account=md", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the second store's order: %d %s", resp.StatusCode, body)
	}

	// Daily totals: a store's own days without tz; every store's side by
	// side in one zone, UTC without tz.
	resp, body := b.do("GET", "/v1/reports/daily?from=2026-11-02&to=2026-11-04&account=md&tz=europe/madrid", nil)
	var one ordersync.DailyTotals
	if err := json.Unmarshal([]byte(body), &one); err != nil || resp.StatusCode != 200 {
		t.Fatalf("md's totals: %d %s", resp.StatusCode, body)
	}
	if one.TZ != "Europe/Madrid" || len(one.Days) != 1 || one.Days[0].Paid != (ordersync.Tally{Count: 2, Total: "23.50"}) || one.Days[0].Account != "" {
		t.Errorf("md's totals: %+v", one)
	}
	_, body = b.do("GET", "/v1/reports/daily?from=2026-11-02&to=2026-11-04&account=*", nil)
	var all ordersync.DailyTotals
	if err := json.Unmarshal([]byte(body), &all); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range all.Days {
		got = append(got, fmt.Sprintf("%s %s %s %d/%s", d.Date, d.Account, d.Currency, d.Paid.Count, d.Paid.Total))
	}
	want := "[2026-11-02 md EUR 2/23.50 2026-11-02 sv USD 1/10.00 2026-11-03 sv USD 1/7.25]"
	if all.TZ != "UTC" || fmt.Sprint(got) != want {
		t.Errorf("every store's totals in %s: %v; want UTC %s", all.TZ, got, want)
	}

	// An export of every store names it in its file.
	resp, body = b.do("GET", "/v1/exports/orders?account=*", nil)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), "ordersync-all-stores-orders-") ||
		len(readCSV(t, []byte(body))) != 6 {
		t.Errorf("export of every store: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
}

// TestStoreChoiceConsole: the Orders and Daily totals pages offer the
// stores and every store, keep the chosen one in their forms and links,
// take each store's zone for its days unless the URL names another, say
// that zone with its offset, and answer an unknown store with a page
// naming the known ones.
func TestStoreChoiceConsole(t *testing.T) {
	t.Parallel()
	b, _ := storesServer(t)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, page := b.do("GET", path, nil)
		return resp, html.UnescapeString(page)
	}

	resp, page := get("/console/orders?account=md")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("md's orders: %d", resp.StatusCode)
	}
	for _, want := range []string{`<option value="*">All stores</option>`, `<option value="md" selected>md</option>`,
		`Dates are days in Europe/Madrid (UTC+01:00).`, `href="/console/orders/m1?account=md"`, `href="/console/orders?account=md">Clear`} {
		if !strings.Contains(page, want) {
			t.Errorf("md's orders page lacks %s", want)
		}
	}
	// The form carries no zone of its own: choosing sv takes sv's.
	if strings.Contains(page, `name="tz"`) {
		t.Error("the form fixes a zone the URL did not choose")
	}
	if strings.Contains(page, "/console/orders/s1") {
		t.Error("md's page lists an order of sv")
	}
	_, page = get("/console/orders?account=sv&paidFrom=2026-11-02&paidTo=2026-11-03")
	if !strings.Contains(page, "Dates are days in America/El_Salvador (UTC−06:00).") ||
		!strings.Contains(page, "/console/orders/s3?account=sv") || !strings.Contains(page, "/console/orders/s1?account=sv") {
		t.Errorf("sv's paid orders of the 2nd in its zone lack s1 and s3")
	}
	// Times show their offset, never an abbreviation alone (CST names
	// several zones).
	if !strings.Contains(page, "2026-11-02 06:01 UTC−06:00") || strings.Contains(page, " CST") {
		t.Errorf("sv's times are not shown with their offset")
	}
	_, page = get("/console/orders?account=*&tz=UTC&paidFrom=2026-11-02&paidTo=2026-11-03")
	for _, want := range []string{`<option value="*" selected>All stores</option>`, `<input type="hidden" name="tz" value="UTC">`,
		"Dates are days in UTC (UTC+00:00).", "/console/orders/s1?account=sv", "/console/orders/m1?account=md", "/console/orders/m2?account=md"} {
		if !strings.Contains(page, want) {
			t.Errorf("every store's orders lack %s", want)
		}
	}
	if strings.Contains(page, "/console/orders/s3") {
		t.Error("s3 is paid on the 3rd in UTC")
	}
	resp, page = get("/console/orders/m1?account=md")
	if resp.StatusCode != 200 || !strings.Contains(page, `/console/orders/m1/resync?account=md`) {
		t.Errorf("md's order page: %d, or its re-sync drops the store", resp.StatusCode)
	}
	for _, path := range []string{"/console/orders?account=madrid", "/console/totals?account=madrid"} {
		resp, page := get(path)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `unknown store "madrid" (known stores: sv, md; * for all stores)`) {
			t.Errorf("GET %s: %d; want a page naming the known stores", path, resp.StatusCode)
		}
	}

	// Daily totals of md: Madrid's days without a zone, its own in the
	// CSV link; every store's side by side.
	_, page = get("/console/totals?account=md&from=2026-11-02&to=2026-11-04")
	if !strings.Contains(page, `<strong id="dayzone">Europe/Madrid (UTC+01:00)</strong>`) || !strings.Contains(page, "23.50") ||
		!strings.Contains(page, `<option value="md" selected>md</option>`) {
		t.Errorf("md's totals are not Madrid's days:\n%s", page)
	}
	m := regexp.MustCompile(`href="(/console/totals\.csv\?[^"]+)"`).FindStringSubmatch(page)
	if m == nil || !strings.Contains(m[1], "account=md") {
		t.Fatalf("the CSV link drops the store: %v", m)
	}
	_, page = get("/console/totals?account=*&from=2026-11-02&to=2026-11-04")
	for _, want := range []string{`<strong id="dayzone">UTC (UTC+00:00)</strong>`, `<td data-label="Date">2026-11-02</td><td data-label="Store">md</td><td data-label="Currency">EUR</td>`,
		`<td data-label="Date">2026-11-02</td><td data-label="Store">sv</td><td data-label="Currency">USD</td>`,
		`<td data-label="Date">2026-11-03</td><td data-label="Store">sv</td><td data-label="Currency">USD</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("every store's totals lack %s", want)
		}
	}
}

// TestStoreChoiceDeadLetters: the Dead letters page filters by the store
// selector, every store by default, and shows the letters of an account
// the deployment does not serve when the URL names it.
func TestStoreChoiceDeadLetters(t *testing.T) {
	t.Parallel()
	b, _ := storesServer(t)
	for path, want := range map[string][]string{
		"/console/dead-letters":               {`<option value="*" selected>All stores</option>`, "the error of sv", "the error of md", "the error of ghost"},
		"/console/dead-letters?account=*":     {`<option value="*" selected>All stores</option>`, "the error of sv", "the error of md", "the error of ghost"},
		"/console/dead-letters?account=md":    {`<option value="md" selected>md</option>`, "the error of md"},
		"/console/dead-letters?account=ghost": {`<option value="ghost" selected>ghost (not served)</option>`, "the error of ghost"},
	} {
		resp, page := b.do("GET", path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("GET %s lacks %s", path, w)
			}
		}
		if n := strings.Count(page, "the error of "); n != len(want)-1 {
			t.Errorf("GET %s shows %d letters, want %d", path, n, len(want)-1)
		}
	}
}

var (
	figureCell  = regexp.MustCompile(`<td class="num"[^>]*><a href="([^"]+)">(\d+) / ([0-9.]+)</a></td>`)
	listedTotal = regexp.MustCompile(`<td class="num"[^>]*>([0-9.]+) [A-Z]{3}</td>`)
)

// TestTotalsLinkToTheirOrders: every figure of Daily totals, for one store
// and for every store, opens the Orders page of exactly the orders it
// counts: as many (the page's count and its rows) and the same sum.
func TestTotalsLinkToTheirOrders(t *testing.T) {
	t.Parallel()
	b, db := storesServer(t)
	mirrorStores(t, db,
		[5]string{"sv", "s4", "PENDING>PAID>CANCELLED", "4.40", "2026-11-02T15:00:00.000Z"},
		[5]string{"sv", "s5", "PENDING>CANCELLED", "1.10", "2026-11-02T16:00:00.000Z"},
		[5]string{"md", "m3", "PAID>FINALIZED", "8.00", "2026-11-02T09:00:00.000Z"},
		[5]string{"md", "m4", "FINALIZED", "2.25", "2026-11-03T09:00:00.000Z"})
	figures := 0
	for _, account := range []string{"sv", "md", "*"} {
		_, page := b.do("GET", "/console/totals?from=2026-11-01&to=2026-11-05&account="+url.QueryEscape(account), nil)
		cells := figureCell.FindAllStringSubmatch(page, -1)
		if len(cells) == 0 {
			t.Fatalf("%s: no linked figure", account)
		}
		for _, c := range cells {
			link, count, total := html.UnescapeString(c[1]), c[2], c[3]
			resp, list := b.do("GET", link, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", link, resp.StatusCode)
			}
			rows := listedTotal.FindAllStringSubmatch(list, -1)
			sum := ordersync.AmountFromInt(0)
			for _, r := range rows {
				a, err := ordersync.ParseAmount(r[1])
				if err != nil {
					t.Fatal(err)
				}
				sum = sum.Add(a)
			}
			want, _ := ordersync.ParseAmount(total)
			if fmt.Sprint(len(rows)) != count || !strings.Contains(list, `<span id="total">`+count+`</span>`) || sum.Cmp(want) != 0 {
				t.Errorf("%s (store %s): the figure is %s / %s, its orders %d / %s", link, account, count, total, len(rows), sum)
			}
			figures++
		}
	}
	if figures < 30 {
		t.Errorf("%d figures followed", figures)
	}
}

// TestReversedInConsole: a payment reversed before any fetch saw it PAID
// shows its paid time and the reversal in the order's timeline, counts as
// reversed (not cancelled) in Daily totals, and the figure opens it.
func TestReversedInConsole(t *testing.T) {
	t.Parallel()
	b, db := storesServer(t)
	mirrorStores(t, db, [5]string{"md", "rv1", "PENDING>CANCELLED*", "9.90", "2026-11-02T11:00:00.000Z"})
	_, page := b.do("GET", "/console/orders/rv1?account=md", nil)
	if !strings.Contains(page, "Payment reversed") || !strings.Contains(page, "Payment (from evidence)") {
		t.Errorf("the reversed order's page lacks the reversal in its timeline")
	}
	if m := regexp.MustCompile(`<dt>Paid</dt><dd>([^<]*<time[^>]*>[^<]+)`).FindStringSubmatch(page); m == nil {
		t.Errorf("the reversed order shows no paid time")
	}
	_, page = b.do("GET", "/console/totals?account=md&from=2026-11-02&to=2026-11-03", nil)
	cells := figureCell.FindAllStringSubmatch(page, -1)
	if len(cells) != 5 {
		t.Fatalf("%d figures on md's 2 November", len(cells))
	}
	// created, paid, cancelled, finalized, reversed
	if cells[4][2] != "1" || cells[4][3] != "9.90" || cells[2][2] != "0" {
		t.Errorf("md's 2 November: reversed %s / %s, cancelled %s; want the reversal counted as reversed", cells[4][2], cells[4][3], cells[2][2])
	}
	_, list := b.do("GET", html.UnescapeString(cells[4][1]), nil)
	if !strings.Contains(list, "/console/orders/rv1?account=md") {
		t.Errorf("the reversed figure does not open rv1")
	}
}
