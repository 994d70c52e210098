package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/admin/console"
	"github.com/ordersync/ordersync/store"
)

// overviewRows writes to db what the overview counts, as of now: two
// webhooks mirrored 3 s after their receipt a minute ago, an order heard
// of and not fetched, dead letters, an endpoint whose last delivery
// failed.
func overviewRows(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for i, code := range []string{"ov1", "ov2"} {
		doc := fmt.Sprintf(`{"orderId":"%d","orderCode":%q,"orderStatus":"PENDING","total":1.5,"store":{"currencyCode":"USD"},"created":"2026-10-10T12:00:00.000Z"}`, 7000+i, code)
		o, err := ordersync.DecodeOrder([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		seq, err := db.AllocateFetchSeq(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		received := now.Add(-time.Minute)
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: ordersync.DefaultAccount, Order: o, Seq: seq,
			FetchedAt: received.Add(3 * time.Second), Cause: ordersync.CauseWebhook,
			Events: []ordersync.EventRecord{{MsgID: "m-" + code, Account: ordersync.DefaultAccount, ReceivedAt: received,
				Type: ordersync.EventCreated, OrderCode: code}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "waiting1"}); err != nil {
		t.Fatal(err)
	}
	addDeadLetters(t, db, now.Add(-time.Hour), 2)
	if _, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "fulfil", URL: "https://fulfil.example/hook",
		Events: ordersync.HookEvents, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{{WebhookID: "w-1", EndpointID: "fulfil", Event: ordersync.HookOrderPaid,
		Account: ordersync.DefaultAccount, OrderCode: "ov1", Outcome: ordersync.DeliveryDeadLettered, Attempts: 8, Status: 503,
		Detail: "unavailable", At: now.Add(-5 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
}

// addDeadLetters adds n malformed dead letters created at at (their event
// log rows then too).
func addDeadLetters(t *testing.T, db *store.DB, at time.Time, n int) {
	t.Helper()
	for range n {
		if _, err := db.AddDeadLetter(context.Background(), ordersync.DeadLetter{MsgID: fmt.Sprint("dl-", time.Now().UnixNano()),
			Account: ordersync.DefaultAccount, Reason: ordersync.ReasonMalformed, Attempts: 1, LastError: "bad",
			Body: []byte(`{}`), CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsoleOverview: the home shows the mirror's figures to a viewer,
// and /console/overview.json, by the session, the same figures as the
// rows inserted say; a dead letter added since shows on the next read.
func TestConsoleOverview(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	now := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
	overviewRows(t, db, now)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Overview, c.Clock = db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")

	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode != http.StatusOK || len(page) > 100<<10 {
		t.Fatalf("home: %d, %d bytes\n%s", resp.StatusCode, len(page), page)
	}
	for _, want := range []string{"<h1>Console</h1>", `data-figure="webhooks-rate">0.4<`, `data-figure="mirrored-rate">0.4<`,
		`data-figure="lag">median 3s, at most 3s (over 2 notices)<`, `data-figure="waiting">1<`, `data-figure="dead-letters">2<`,
		`<td>malformed</td><td class="num">2</td>`, "<td>fulfil</td>", "<td>failing: 0% delivered</td>", "HTTP 503: unavailable",
		`<script src="/console/static/overview.js" defer></script>`, "last 5 minutes, divided by 5"} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %s", want)
		}
	}
	if strings.Contains(page, "style=") || strings.Contains(page, "<script>") {
		t.Error("inline script or style")
	}
	if resp, _ := b.do("GET", "/console/static/overview.js", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("overview.js: %d", resp.StatusCode)
	}

	var got console.OverviewView
	read := func() {
		t.Helper()
		resp, body := b.do("GET", "/console/overview.json", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("overview.json: %d %s", resp.StatusCode, body)
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
	}
	read()
	pending, err := db.PendingOutbox(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got.Webhooks != 2 || got.Mirrored != 2 || got.LagSamples != 2 || got.LagMedianMs != 3000 || got.Waiting != 1 ||
		got.Unsent != len(pending) || got.WindowMinutes != 5 || got.Text["dead-letters"] != "2" ||
		fmt.Sprint(got.Tables["dead-letters"]) != "[[malformed 2]]" || len(got.Tables["endpoints"]) != 1 || got.Tables["endpoints"][0][4] != "1" {
		t.Errorf("overview.json %+v", got)
	}
	addDeadLetters(t, db, now.Add(-time.Hour), 1)
	read()
	if got.Text["dead-letters"] != "3" {
		t.Errorf("after another dead letter: %q", got.Text["dead-letters"])
	}
	if resp, _ := newBrowser(t, base).do("GET", "/console/overview.json", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("overview.json without a session: %d, want 303 to sign in", resp.StatusCode)
	}
}

// moneyFigure is a figure of the overview's collected totals: the
// store, the currency, the day, the total, the count and the link.
var moneyFigure = regexp.MustCompile(`<a data-day="(today|yesterday)" href="([^"]+)"><span class="figure">([0-9.]+)</span><br>([0-9]+) orders</a>`)

// TestOverviewMoney: the overview opens with what each store collected
// today and yesterday, per currency, on the store's own days (named with
// their offset), then for all stores on UTC days, each currency apart: a
// reversed payment, an unpaid order and another day's payment are not
// counted, and each figure links to exactly the orders it
// counts: the Orders page counts as many, and the API's listing of the
// same query gives the same count and the same sum.
func TestOverviewMoney(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	mirrorStores(t, db,
		// Paid at 08:01 and 09:01 UTC, the 3rd in El Salvador (UTC−06:00).
		[5]string{"sv", "a1", "PAID", "10.00", "2026-11-03T08:00:00.000Z"},
		[5]string{"sv", "a2", "PAID>FINALIZED", "5.25", "2026-11-03T09:00:00.000Z"},
		// Paid today, then reversed: not collected.
		[5]string{"sv", "a3", "PAID>CANCELLED", "4.00", "2026-11-03T07:00:00.000Z"},
		// Paid at 04:01 UTC: 22:01 on the 2nd in El Salvador, yesterday.
		[5]string{"sv", "a4", "PAID", "7.25", "2026-11-03T04:00:00.000Z"},
		[5]string{"sv", "a5", "PENDING", "3.00", "2026-11-03T05:00:00.000Z"},
		// Paid two days ago.
		[5]string{"sv", "a6", "PAID", "9.99", "2026-11-01T15:00:00.000Z"},
		[5]string{"md", "b1", "PAID", "20.00", "2026-11-02T10:00:00.000Z"},
		// Paid at 23:31 UTC on the 2nd: 00:31 on the 3rd in Madrid, today.
		[5]string{"md", "b2", "PAID", "3.50", "2026-11-02T23:30:00.000Z"},
		[5]string{"md", "b3", "PAID>FINALIZED", "12.00", "2026-11-03T10:00:00.000Z"},
		[5]string{"md", "b4", "PENDING>CANCELLED", "8.00", "2026-11-03T09:00:00.000Z"})
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Account, c.Stores = "sv", []string{"sv", "md"}
		c.Reports, c.Exports, c.Overview, c.Clock = db, db, db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")
	client := newBrowser(t, base)
	client.header.Set("Authorization", "Bearer eve-token")

	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("home: %d\n%s", resp.StatusCode, page)
	}
	money, health := strings.Index(page, `id="money"`), strings.Index(page, `id="overview"`)
	if money < 0 || health < 0 || money > health {
		t.Errorf("the collected totals (at %d) do not come before the pipeline's health (at %d)", money, health)
	}
	for _, want := range []string{"Days in <span class=\"zone\">America/El_Salvador (UTC−06:00)</span>",
		"Days in <span class=\"zone\">Europe/Madrid (UTC+01:00)</span>", "Today, 2026-11-03", "Yesterday, 2026-11-02"} {
		if !strings.Contains(html.UnescapeString(page), want) {
			t.Errorf("the overview lacks %s", want)
		}
	}
	want := map[string]string{
		"sv USD today": "2 15.25", "sv USD yesterday": "1 7.25",
		"md EUR today": "2 15.50", "md EUR yesterday": "1 20.00",
		// All stores on UTC days: a4 is today's, b2 yesterday's.
		"* USD today": "3 22.50", "* USD yesterday": "0 0.00",
		"* EUR today": "1 12.00", "* EUR yesterday": "2 23.50",
	}
	got := map[string]string{}
	for _, store := range []string{"sv", "md", api.AllStores} {
		start := strings.Index(page, `data-store="`+store+`"`)
		if start < 0 {
			t.Fatalf("no collected totals for store %s", store)
		}
		section := page[start:]
		section = section[:strings.Index(section, "</section>")]
		for _, m := range moneyFigure.FindAllStringSubmatch(section, -1) {
			day, link, total, count := m[1], html.UnescapeString(m[2]), m[3], m[4]
			u, err := url.Parse(link)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			key := store + " " + q.Get("currency") + " " + day
			got[key] = count + " " + total
			if u.Path != "/console/orders" || q.Get("account") != store || q.Get("status") != ordersync.StatusGroupCollected ||
				q.Get("paidFrom") == "" || q.Get("paidTo") == "" {
				t.Errorf("%s links to %s: want the store's collected orders paid on the day", key, link)
			}
			if store == api.AllStores && q.Get("tz") != "UTC" {
				t.Errorf("%s links to %s: want all stores' orders on UTC days", key, link)
			}
			// The Orders page of the link counts as many orders.
			resp, listing := b.do("GET", link, nil)
			if resp.StatusCode != http.StatusOK || !strings.Contains(listing, `<span id="total">`+count+`</span>`) {
				t.Errorf("%s: the Orders page of %s (%d) does not count %s orders", key, link, resp.StatusCode, count)
			}
			// The API's listing of the same query: the same orders, the
			// same sum.
			q.Del("count")
			q.Set("limit", "1000")
			resp, body := client.do("GET", "/v1/orders?"+q.Encode(), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /v1/orders?%s: %d %s", q.Encode(), resp.StatusCode, body)
			}
			var list struct {
				Orders []struct {
					Total json.Number
				}
			}
			dec := json.NewDecoder(strings.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&list); err != nil {
				t.Fatal(err)
			}
			sum := ordersync.AmountFromInt(0)
			for _, o := range list.Orders {
				sum = sum.Add(ordersync.MustAmount(o.Total.String()))
			}
			if len(list.Orders) != mustAtoi(t, count) || ordersync.FormatMinorUnits(sum, q.Get("currency")) != total {
				t.Errorf("%s: the figure is %s / %s, its listing %d / %s", key, count, total, len(list.Orders), sum)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("collected totals %v, want %v", got, want)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countingOrders counts the calls of the office's order listing.
type countingOrders struct {
	ordersync.MirrorReader
	lists atomic.Int64
}

func (c *countingOrders) ListOrders(ctx context.Context, f ordersync.OrderFilter) (ordersync.OrderPage, error) {
	c.lists.Add(1)
	return c.MirrorReader.ListOrders(ctx, f)
}

// behindReports is a report reader whose indexer has changes to count.
type behindReports struct{ ordersync.Reports }

func (r behindReports) DailyTotals(ctx context.Context, p ordersync.DailyTotalsParams) (ordersync.DailyTotals, error) {
	t, err := r.Reports.DailyTotals(ctx, p)
	t.AsOf, t.Behind = time.Date(2026, 11, 3, 11, 0, 0, 0, time.UTC), true
	return t, err
}

// TestOverviewMoneyReadsTheReport checks that the Overview's collected
// totals come from the daily report's sums, whose cost grows with the
// stores and days, never from listing the orders, and say how current
// they are as Daily totals does.
func TestOverviewMoneyReadsTheReport(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	mirrorStores(t, db,
		[5]string{"sv", "a1", "PAID", "10.00", "2026-11-03T08:00:00.000Z"},
		[5]string{"sv", "a2", "PAID>CANCELLED", "4.00", "2026-11-03T07:00:00.000Z"},
		[5]string{"md", "b1", "PAID>FINALIZED", "12.00", "2026-11-03T10:00:00.000Z"})
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	orders := &countingOrders{MirrorReader: db}
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Account, c.Stores, c.Orders = "sv", []string{"sv", "md"}, orders
		c.Reports, c.Exports, c.Overview, c.Clock = behindReports{db}, db, db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")
	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("home: %d\n%s", resp.StatusCode, page)
	}
	if n := orders.lists.Load(); n != 0 {
		t.Errorf("the overview listed orders %d times: want its figures from the report's sums", n)
	}
	section := page[strings.Index(page, `data-store="sv"`):]
	for _, want := range []string{`<span class="figure">10.00</span><br>1 orders`,
		"Figures as of 2026-11-03 05:00:00 -06:00: orders changed since then are not counted yet"} {
		if !strings.Contains(html.UnescapeString(section), want) {
			t.Errorf("store sv's collected totals lack %q", want)
		}
	}
}

// garbledReports gives every collected total as text no amount reads.
type garbledReports struct{ ordersync.Reports }

func (r garbledReports) DailyTotals(ctx context.Context, p ordersync.DailyTotalsParams) (ordersync.DailyTotals, error) {
	t, err := r.Reports.DailyTotals(ctx, p)
	for i := range t.Days {
		if t.Days[i].Collected.Count > 0 {
			t.Days[i].Collected.Total = "ten"
		}
	}
	return t, err
}

// TestOverviewMoneyRefusesAnUnreadableTotal: a collected total the page
// cannot read exactly fails the page; it is never left out of a sum that
// would then match no other view.
func TestOverviewMoneyRefusesAnUnreadableTotal(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	mirrorStores(t, db, [5]string{"sv", "a1", "PAID", "10.00", "2026-11-03T08:00:00.000Z"})
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Account, c.Stores = "sv", []string{"sv"}
		c.Reports, c.Exports, c.Overview, c.Clock = garbledReports{db}, db, db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")
	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode == http.StatusOK && strings.Contains(page, `data-store="sv"`) {
		t.Fatalf("home with an unreadable collected total: %d, the store's money shown", resp.StatusCode)
	}
}
