package admin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
)

// TestStoresInBrowser drives the Store selector and a daily total's link
// in chromium: choosing the second store on Orders lists its orders and
// says its zone, a later search keeps the store, and on Daily totals that
// store's paid figure opens exactly the orders it counts (their count on
// the page, their rows and their sum).
func TestStoresInBrowser(t *testing.T) {
	h := newHeadless(t)
	base, _ := storesBase(t)
	h.signIn(base, "eve-token")

	h.load("open Orders", chromedp.Navigate(base+"/console/orders"))
	h.do("choose md", chromedp.SetValue(chromedp.CSS("#account"), "md"))
	h.load("show md's orders", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	if rows := h.text("table tbody"); !strings.Contains(rows, "m1") || !strings.Contains(rows, "m2") || strings.Contains(rows, "s1") {
		t.Errorf("md's orders: %q", rows)
	}
	if zone := h.text("#datezone"); !strings.Contains(zone, "Europe/Madrid (UTC+01:00)") {
		t.Errorf("md's date zone: %q", zone)
	}
	h.do("choose collected", chromedp.SetValue(chromedp.CSS("#status"), ordersync.StatusGroupCollected))
	h.load("search again", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	loc, err := chromedp.Run(h.ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "account=md") || !strings.Contains(loc, "status=collected") {
		t.Errorf("the second search dropped the store: %s (%v)", loc, err)
	}

	h.load("open Daily totals", chromedp.Navigate(base+"/console/totals?from=2026-11-01&to=2026-11-05"))
	h.do("choose md", chromedp.SetValue(chromedp.CSS("#account"), "md"))
	h.load("show md's totals", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	if zone := h.text("#dayzone"); zone != "Europe/Madrid (UTC+01:00)" {
		t.Errorf("md's day zone: %q", zone)
	}
	figure := h.text("table.totals tbody tr:first-child td:nth-child(4) a")
	var count int
	var total string
	if _, err := fmt.Sscanf(figure, "%d / %s", &count, &total); err != nil || count != 2 || total != "23.50" {
		t.Fatalf("md's paid figure of 2 November: %q (%v)", figure, err)
	}
	h.load("open its orders", chromedp.Click(chromedp.CSS("table.totals tbody tr:first-child td:nth-child(4) a")))
	if got := h.text("#total"); got != fmt.Sprint(count) {
		t.Errorf("the figure's orders count %s, the figure %d", got, count)
	}
	rows := h.text("table tbody")
	if !strings.Contains(rows, "m1") || !strings.Contains(rows, "m2") || !strings.Contains(rows, "20.00 EUR") || !strings.Contains(rows, "3.50 EUR") {
		t.Errorf("the figure's orders: %q", rows)
	}
	h.check()
}
