package admin_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// mirrorOrders writes orders to db as fetched at fetchedAt: each is code,
// status, currency, total and created time.
func mirrorOrders(t *testing.T, db *store.DB, fetchedAt time.Time, orders ...[5]string) {
	t.Helper()
	at := make([]time.Time, len(orders))
	for i := range at {
		at[i] = fetchedAt
	}
	mirrorOrdersAt(t, db, at, orders)
}

// mirrorOrdersAt is mirrorOrders with each order fetched at its own time,
// all in one transaction.
func mirrorOrdersAt(t *testing.T, db *store.DB, fetchedAt []time.Time, orders [][5]string) {
	t.Helper()
	var params []ordersync.ApplyParams
	seq, err := db.AllocateFetchSeq(context.Background(), len(orders))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range orders {
		doc := fmt.Sprintf(`{"orderId":"%d","orderCode":%q,"orderReference":"ref-%s","name":"Pedido","orderStatus":%q,
"subtotal":%s,"totalDetails":{"shippingAmount":0,"discountAmount":0,"surchargeAmount":0},"total":%s,
"store":{"currencyCode":%q,"timezone":"America/El_Salvador"},"created":%q}`, 5000+i, o[0], o[0], o[1], o[3], o[3], o[2], o[4])
		order, err := ordersync.DecodeOrder([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: order,
			Seq: seq + int64(i), FetchedAt: fetchedAt[i], Cause: ordersync.CauseTrack})
	}
	if _, err := db.ApplyOrders(context.Background(), params); err != nil {
		t.Fatal(err)
	}
}

// totalsRow reads the table rows of the Daily totals page as the CSV
// writes them: date, currency, then count and total of each figure, net.
var totalsRow = regexp.MustCompile(`<tr><td[^>]*>([0-9-]+)</td><td[^>]*>([A-Z]+)</td>((?:<td class="num"[^>]*>(?:<a href="[^"]*">)?[^<]*(?:</a>)?</td>){6})</tr>`)
var totalsCell = regexp.MustCompile(`<td class="num"[^>]*>(?:<a href="[^"]*">)?([^<]*)(?:</a>)?</td>`)

func totalsTable(page string) [][]string {
	var rows [][]string
	for _, m := range totalsRow.FindAllStringSubmatch(page, -1) {
		row := []string{m[1], m[2]}
		cells := totalsCell.FindAllStringSubmatch(m[3], -1)
		for i, c := range cells {
			if i < 5 {
				count, total, _ := strings.Cut(c[1], " / ")
				row = append(row, count, total)
			} else {
				row = append(row, c[1])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// TestConsoleTotals: a viewer sees the daily report of the range and zone
// in the URL (the last 30 days in the store's zone without one), each
// currency's amounts exact and apart, never summed together, one chart
// per currency; the CSV link downloads by the session exactly the table's
// rows; a bad zone is named.
func TestConsoleTotals(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	fetched := time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)
	mirrorOrders(t, db, fetched,
		[5]string{"usd1", "PAID", "USD", "0.10", "2026-10-10T12:00:00.000Z"},
		[5]string{"usd2", "PAID", "USD", "0.10", "2026-10-10T13:00:00.000Z"},
		[5]string{"usd3", "PAID", "USD", "0.10", "2026-10-10T14:00:00.000Z"},
		[5]string{"eur1", "PAID", "EUR", "7.5", "2026-10-10T15:00:00.000Z"},
		[5]string{"usd4", "PENDING", "USD", "99.99", "2026-10-08T15:00:00.000Z"})
	now := time.Date(2026, 10, 11, 3, 0, 0, 0, time.UTC) // still 10 October in El Salvador
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Reports, c.Exports, c.Clock = db, db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")

	resp, page := b.do("GET", "/console/totals", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("totals: %d\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{`id="from" name="from" type="date" value="2026-09-11"`, `id="to" name="to" type="date" value="2026-10-11"`,
		`America/El_Salvador (UTC−06:00)`, `aria-current="page">Daily totals`} {
		if !strings.Contains(page, want) {
			t.Errorf("the default range lacks %s", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "style=") {
		t.Error("the page has inline script or style")
	}

	_, page = b.do("GET", "/console/totals?from=2026-10-09&to=2026-10-11&tz=UTC", nil)
	rows := totalsTable(page)
	want := [][]string{
		{"2026-10-10", "EUR", "1", "7.50", "1", "7.50", "0", "0.00", "0", "0.00", "0", "0.00", "7.50"},
		{"2026-10-10", "USD", "3", "0.30", "3", "0.30", "0", "0.00", "0", "0.00", "0", "0.00", "0.30"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("table rows\n%v\nwant\n%v", rows, want)
	}
	if strings.Contains(page, "7.80") || strings.Contains(page, "0.30000") {
		t.Error("an amount summed across currencies or through a float")
	}
	if n := strings.Count(page, `<figure class="chart">`); n != 2 ||
		!strings.Contains(page, "Paid per day in EUR (highest: 7.50 EUR)") || !strings.Contains(page, "Paid per day in USD (highest: 0.30 USD)") {
		t.Errorf("%d charts, want one per currency", n)
	}
	if !strings.Contains(page, "<title>2026-10-10: 0.30 USD paid (3 orders)</title>") {
		t.Error("the USD bar does not say its exact total")
	}

	// The CSV link: the table's rows, by the session.
	m := regexp.MustCompile(`href="(/console/totals\.csv\?[^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSV link")
	}
	link := html.UnescapeString(m[1])
	resp, body := b.do("GET", link, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("CSV: %d %v", resp.StatusCode, resp.Header)
	}
	csvRows := readCSV(t, []byte(body))
	if strings.Join(csvRows[0], ",") != strings.Join(api.DailyCSVHeader, ",") || len(csvRows) != len(rows)+1 {
		t.Fatalf("CSV %q, want the header and %d rows", csvRows, len(rows))
	}
	for i, r := range csvRows[1:] {
		// The CSV has the zone after the date.
		if r[2] != "UTC" && r[1] != "UTC" {
			t.Errorf("CSV row %v lacks the zone", r)
		}
		// The last column names the store in a report of several.
		got := append([]string{r[0]}, r[2:len(r)-1]...)
		if fmt.Sprint(got) != fmt.Sprint(rows[i]) {
			t.Errorf("CSV row %v, table row %v", got, rows[i])
		}
	}
	if resp, _ := newBrowser(t, base).do("GET", link, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the CSV without a session: %d, want 303 to sign in", resp.StatusCode)
	}

	// The range applies: the day before has only the pending order's creation.
	_, page = b.do("GET", "/console/totals?from=2026-10-08&to=2026-10-09&tz=UTC", nil)
	if rows := totalsTable(page); len(rows) != 1 || rows[0][1] != "USD" || rows[0][3] != "99.99" || rows[0][4] != "0" {
		t.Errorf("8 October: %v", rows)
	}
	resp, page = b.do("GET", "/console/totals?from=2026-10-08&to=2026-10-09&tz=Mars/Olympus", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "<strong>Time zone</strong>") { // its label on screen
		t.Errorf("a bad zone: %d", resp.StatusCode)
	}
}

// TestConsoleTotalsWeight: with orders paid every day in three
// currencies, the default range and a whole year each weigh under
// 100 KB: the year's table comes 30 rows at a time, every row on some
// page.
func TestConsoleTotalsWeight(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	now := time.Date(2026, 10, 11, 3, 0, 0, 0, time.UTC)
	var at []time.Time
	var orders [][5]string
	for d := range 366 {
		day := now.AddDate(0, 0, -d)
		for _, c := range []string{"USD", "EUR", "KWD"} {
			at = append(at, day.Add(time.Hour))
			orders = append(orders, [5]string{fmt.Sprintf("w%s%d", c, d), "PAID", c, "123456.789", day.Format("2006-01-02T15:04:05.000Z")})
		}
	}
	mirrorOrdersAt(t, db, at, orders)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Reports, c.Exports, c.Clock = db, db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")
	for path, want := range map[string]int{"/console/totals": 3 * 30, "/console/totals?from=2025-10-11&to=2026-10-11&tz=UTC": 3 * 365} {
		first, rows := path, 0
		for page := 0; path != "" && page < 40; page++ {
			resp, body := b.do("GET", path, nil)
			if resp.StatusCode != http.StatusOK || len(body) > 100<<10 {
				t.Errorf("%s: %d, %d bytes; want at most 100 KB", path, resp.StatusCode, len(body))
			}
			rows += len(totalsTable(body))
			path = ""
			if m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
			}
		}
		if rows != want {
			t.Errorf("%s: %d rows over the pages, want %d", first, rows, want)
		}
	}
}

// TestConsoleTotalsBehindIndexer: while the indexer has not counted a
// write, the page says its figures are as of an earlier time and not
// current, and shows none of the write; once counted, it shows the write
// as current.
func TestConsoleTotalsBehindIndexer(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.Config{URL: testdb.SQLitePath(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mirrorOrders(t, db, time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC),
		[5]string{"usd1", "PAID", "USD", "0.10", "2026-10-10T12:00:00.000Z"})
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) { c.Reports, c.Exports = db, db })
	b := newBrowser(t, base)
	b.signIn("eve-token")
	const path = "/console/totals?from=2026-10-09&to=2026-10-11&tz=UTC"
	_, page := b.do("GET", path, nil)
	if !strings.Contains(page, `id="asof">Figures as of `) || !strings.Contains(page, "not counted yet") {
		t.Errorf("behind, the page does not say so:\n%s", page)
	}
	if rows := totalsTable(page); len(rows) != 0 {
		t.Errorf("behind, the page shows %v", rows)
	}
	if _, err := db.IndexNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, page = b.do("GET", path, nil)
	if !strings.Contains(page, `<p class="hint" id="asof">Figures as of `) || strings.Contains(page, "not counted yet") {
		t.Errorf("indexed, the page does not say its figures are current:\n%s", page)
	}
	if rows := totalsTable(page); len(rows) != 1 || rows[0][2] != "1" {
		t.Errorf("indexed, the page shows %v, want the order", rows)
	}
}
