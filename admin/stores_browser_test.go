package admin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
)

// TestStoresInBrowser drives the Store selector and a daily total's link
// in chromium on the office data set: choosing madrid on Orders lists its
// orders alone and says its zone, a later search keeps the store, and on
// Daily totals madrid's Paid figure of 26 November (reversals since
// included) is the data set's
// and opens exactly the orders it counts.
func TestStoresInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	a, _ := officeEnv(t)
	base := a.url
	h.signIn(base, "eve-token")

	h.load("open Orders", chromedp.Navigate(base+"/console/orders"))
	h.do("choose madrid", chromedp.SetValue(chromedp.CSS("#account"), "madrid"))
	h.load("show madrid's orders", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	if rows := h.text("table tbody"); !strings.Contains(rows, "MD0") || strings.Contains(rows, "SV0") || strings.Contains(rows, "USD") {
		t.Errorf("madrid's orders: %q", rows)
	}
	if zone := h.text("#datezone"); !strings.Contains(zone, "Europe/Madrid (UTC+01:00)") {
		t.Errorf("madrid's date zone: %q", zone)
	}
	h.do("choose collected", chromedp.SetValue(chromedp.CSS("#status"), ordersync.StatusGroupCollected))
	h.load("search again", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	loc, err := chromedp.Run(h.ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "account=madrid") || !strings.Contains(loc, "status=collected") {
		t.Errorf("the second search dropped the store: %s (%v)", loc, err)
	}

	h.load("open Daily totals", chromedp.Navigate(base+"/console/totals?from=2026-11-26&to=2026-11-27"))
	h.do("choose madrid", chromedp.SetValue(chromedp.CSS("#account"), "madrid"))
	h.load("show madrid's totals", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	if zone := h.text("#dayzone"); zone != "Europe/Madrid (UTC+01:00)" {
		t.Errorf("madrid's day zone: %q", zone)
	}
	wantN, wantSum := officeCollected(t, "madrid", "2026-11-26", true)
	figure := h.text("table.totals tbody tr:first-child td:nth-child(4) a")
	var count int
	var total string
	if _, err := fmt.Sscanf(figure, "%d / %s", &count, &total); err != nil || count != wantN || total != wantSum.String() {
		t.Fatalf("madrid's paid figure of 26 November: %q (%v), the data set's %d / %s", figure, err, wantN, wantSum)
	}
	h.load("open its orders", chromedp.Click(chromedp.CSS("table.totals tbody tr:first-child td:nth-child(4) a")))
	if got := h.text("#total"); got != fmt.Sprint(count) {
		t.Errorf("the figure's orders count %s, the figure %d", got, count)
	}
	if rows := h.text("table tbody"); !strings.Contains(rows, "EUR") || strings.Contains(rows, "USD") || strings.Contains(rows, "SV0") {
		t.Errorf("the figure's orders: %q", rows)
	}
	h.check()
}
