package admin_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
)

// TestBuyerSaysTheyPaidInBrowser: on the office data set, a viewer with a
// buyer on the phone finds the buyer's order among both stores' 600 by
// what the buyer says: the email in capitals, the phone in four ways, the
// reference's beginning in another case, and the amount, which finds the
// other store's order of the same amount too; the order page then shows
// the buyer and the payment.
func TestBuyerSaysTheyPaidInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	a, _ := officeEnv(t)
	h.signIn(a.url, "eve-token")

	h.load("open Orders", chromedp.Navigate(a.url+"/console/orders"))
	h.do("choose all stores", chromedp.SetValue(chromedp.CSS("#account"), "*"))
	for _, s := range []struct {
		q    string
		want []string
	}{
		{strings.ToUpper(officeCall.Email), []string{officeCall.Code}},
		{"73657811", []string{officeCall.Code}},
		{"7365-7811", []string{officeCall.Code}},
		{"+503 7365 7811", []string{officeCall.Code}},
		{"(503) 7365.7811", []string{officeCall.Code}},
		{strings.ToLower(officeCall.Reference[:8]), []string{officeCall.Code}},
		{officeCall.Total, []string{officeCall.Code, "MD-SAME"}},
	} {
		h.do("type "+s.q, chromedp.Clear(chromedp.CSS("#q")), chromedp.SendKeys(chromedp.CSS("#q"), s.q))
		h.load("search "+s.q, chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
		if got := h.text("#total"); got != fmt.Sprint(len(s.want)) {
			t.Errorf("search %q counts %s orders, want %d: %q", s.q, got, len(s.want), h.text("table tbody"))
		}
		rows := h.text("table tbody")
		for _, code := range s.want {
			if !strings.Contains(rows, code) {
				t.Errorf("search %q lists %q, want %s among them", s.q, rows, code)
			}
		}
	}
	h.shot("orders-search")
	h.load("open the buyer's order", chromedp.Click(chromedp.CSS(`tbody a[href^="/console/orders/`+officeCall.Code+`?"]`)))
	if body := h.text("main"); !strings.Contains(body, officeCall.Email) || !strings.Contains(body, "Ana López") ||
		!strings.Contains(body, officeCall.Reference) || !strings.Contains(body, "12.50 USD") {
		t.Errorf("the buyer's order page lacks the buyer, the reference or the amount: %q", body)
	}
	h.check()
}

// overviewFigure is a figure of the Overview's money: total, then count.
var overviewFigure = regexp.MustCompile(`^([0-9]+\.[0-9]{2})\s+([0-9]+) orders$`)

// TestYesterdayCollectedInBrowser: on the office data set, yesterday's
// collected figure of each store, and of all stores in each currency, on
// the Overview opens an Orders page counting as many orders as the
// figure, and that page's "Export this view" holds as many rows summing
// to the figure.
func TestYesterdayCollectedInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	a, _ := officeEnv(t)
	h.signIn(a.url, "eve-token")
	for _, s := range []struct{ sel, currency string }{
		{`section.money[data-store="default"]`, "USD"},
		{`section.money[data-store="madrid"]`, "EUR"},
		{`section.money[data-store="*"]`, "USD"},
		{`section.money[data-store="*"]`, "EUR"},
	} {
		h.load("open the Overview", chromedp.Navigate(a.url+"/console/"))
		link := s.sel + fmt.Sprintf(` tr[data-currency=%q] a[data-day="yesterday"]`, s.currency)
		followCollected(t, h, link, s.currency)
	}
	// The documentation's pictures of both stores' orders and days.
	h.load("open all stores' orders", chromedp.Navigate(a.url+"/console/orders?account=*&limit=15"))
	h.shot("orders")
	h.load("open all stores' Daily totals", chromedp.Navigate(a.url+"/console/totals?account=*&from=2026-11-24&to=2026-11-28"))
	h.shot("totals")
	h.check()
}

// followCollected reads the Overview's figure at link (total and count in
// currency), follows it, and checks that the Orders page and its export
// count as many orders summing to the figure.
func followCollected(t *testing.T, h *headless, link, currency string) {
	t.Helper()
	m := overviewFigure.FindStringSubmatch(strings.TrimSpace(h.text(link)))
	if m == nil || m[2] == "0" {
		t.Fatalf("%s: %q, want a total and a count", link, h.text(link))
	}
	h.load("open the orders of "+link, chromedp.Click(chromedp.CSS(link)))
	if got := h.text("#total"); got != m[2] {
		t.Errorf("%s counts %s orders, its Orders page %s", link, m[2], got)
	}
	_, recs := readExport(t, string(h.download("#exportview")))
	n, sums, _ := exportSums(t, recs)
	if fmt.Sprint(n) != m[2] || sums[currency] != m[1] || len(sums) != 1 {
		t.Errorf("%s is %s orders, %s %s; its export %d rows summing %v", link, m[2], m[1], currency, n, sums)
	}
	if statuses := exportColumn(recs, "status"); len(statuses) > 0 {
		for _, st := range statuses {
			if st != string(ordersync.StatusPaid) && st != string(ordersync.StatusFinalized) {
				t.Errorf("%s's export holds an order %s, not collected", link, st)
				break
			}
		}
	}
}

// exportColumn is the values of a file's column name, nil without it.
func exportColumn(recs [][]string, name string) []string {
	var out []string
	for i, h := range recs[0] {
		if h == name {
			for _, r := range recs[1:] {
				out = append(out, r[i])
			}
		}
	}
	return out
}

// TestReversedPaymentInBrowser: on the office data set, madrid's Daily
// totals count yesterday's reversed payments (cancelled after a payment,
// seen paid or not) in Reversed; the figure opens as many orders, each
// cancelled, and an order's timeline says its payment was reversed.
func TestReversedPaymentInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	a, _ := officeEnv(t)
	h.signIn(a.url, "eve-token")

	h.load("open madrid's Daily totals", chromedp.Navigate(a.url+"/console/totals?account=madrid&from=2026-11-26&to=2026-11-27"))
	const cell = `table.totals tbody tr:first-child td[data-label="Reversed"] a`
	var count int
	var total string
	if _, err := fmt.Sscanf(h.text(cell), "%d / %s", &count, &total); err != nil || count == 0 {
		t.Fatalf("madrid's reversed figure of yesterday: %q (%v)", h.text(cell), err)
	}
	h.load("open the reversed orders", chromedp.Click(chromedp.CSS(cell)))
	if got := h.text("#total"); got != fmt.Sprint(count) {
		t.Errorf("the reversed figure counts %d, its Orders page %s", count, got)
	}
	if rows := h.text("table tbody"); strings.Count(rows, "CANCELLED") != count {
		t.Errorf("the reversed orders are not all cancelled: %q", rows)
	}
	h.load("open a reversed order", chromedp.Click(chromedp.CSS(`table tbody tr:first-child a[href^="/console/orders/MD"]`)))
	if tl := h.text("ol.timeline"); !strings.Contains(tl, "Payment reversed") {
		t.Errorf("a reversed order's timeline: %q", tl)
	}
	h.check()
}
