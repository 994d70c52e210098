package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync/sim"
)

// screenshotsEnv names the directory (relative to the repository root, or
// absolute) where the browser tests save a PNG of each page they see.
const screenshotsEnv = "ORDERSYNC_CONSOLE_SCREENSHOTS"

// TestConsoleInBrowser drives the console in chromium: sign in, search an
// order by its reference and by its buyer's email, switch the time zone,
// download "Export this view" and read the CSV, open the order and see its
// timeline, re-sync it as an operator, have a form without its CSRF token
// refused, and as a viewer find Re-sync disabled and refused by the
// server. Any error a page reports fails it.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	e, codes := newConsoleEnv(t)

	h.load("open the console", chromedp.Navigate(e.url+"/"))
	if got := h.text("h1"); got != "Sign in" {
		t.Fatalf("the console without a session shows %q, want the sign-in page", got)
	}
	h.shot("sign-in")
	h.signIn(e.url, "ops-token")

	h.load("open Orders", chromedp.Click(chromedp.CSS(`nav a[href="/console/orders"]`)))
	for _, q := range []string{"A-1", sim.DefaultBuyer.Email} {
		h.do("type the search", chromedp.Clear(chromedp.CSS("#q")), chromedp.SendKeys(chromedp.CSS("#q"), q))
		h.load("search "+q, chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
		rows := h.text("tbody")
		if !strings.Contains(rows, codes[0]) || strings.Contains(rows, codes[1]) {
			t.Errorf("search %q lists %q, want %s alone", q, rows, codes[0])
		}
	}

	// The store's zone by default; UTC once switched, on every page after.
	if created := h.text("tbody time"); strings.HasSuffix(created, "UTC") {
		t.Errorf("a time shows %q in UTC, want the store's zone by default", created)
	}
	h.do("choose UTC", chromedp.SetValue(chromedp.CSS("#zone"), "utc"))
	h.load("switch the zone", chromedp.Click(chromedp.CSS("form.zone button")))
	if created := h.text("tbody time"); !strings.HasSuffix(created, "UTC") {
		t.Errorf("after switching to UTC a time shows %q", created)
	}
	h.do("choose the store's zone", chromedp.SetValue(chromedp.CSS("#zone"), "store"))
	h.load("switch the zone back", chromedp.Click(chromedp.CSS("form.zone button")))

	// Export this view: the paid orders.
	h.do("clear the search", chromedp.Clear(chromedp.CSS("#q")), chromedp.SetValue(chromedp.CSS("#status"), "PAID"))
	h.load("filter by status", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	rows := readCSV(t, h.download(`#exportview`))
	if len(rows) != 2 || !strings.Contains(strings.Join(rows[1], ","), codes[0]) {
		t.Errorf("Export this view of the paid orders: %q, want a header and %s", rows, codes[0])
	}

	h.load("open the order", chromedp.Click(chromedp.CSS(`tbody a[href="/console/orders/`+codes[0]+`?account=default"]`)))
	if tl := h.text("ol.timeline"); !strings.Contains(tl, "PENDING → PAID") || !strings.Contains(tl, "first seen → PENDING") ||
		!strings.Contains(tl, "Document changed") || !strings.Contains(tl, "PAID trigger") {
		t.Errorf("the timeline is %q, want the order's status changes, its document's change and the PAID trigger", tl)
	}
	if body := h.text("main"); !strings.Contains(body, sim.DefaultBuyer.Email) || !strings.Contains(body, "Combo") {
		t.Errorf("the order page lacks its buyer or line items: %q", body)
	}
	h.shot("order")
	h.load("re-sync", chromedp.Click(chromedp.CSS("form.act button")))
	if msg := h.text("main"); !strings.Contains(msg, "Re-synced") {
		t.Errorf("after Re-sync now the page says %q", msg)
	}
	h.shot("order-resynced")

	// The same form without its CSRF token is refused.
	h.do("drop the CSRF token", chromedp.SetAttributeValue(chromedp.CSS(`form.act input[name=csrf]`), "value", ""))
	h.load("re-sync without CSRF", chromedp.Click(chromedp.CSS("form.act button")))
	if body := h.text("body"); !strings.Contains(body, "CSRF token is missing or wrong") {
		t.Errorf("a form without its CSRF token answers %q", body)
	}

	// A narrow screen and the dark scheme, as people use them.
	h.do("narrow, dark", chromedp.EmulateViewport(390, 844), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	h.load("orders on a narrow screen", chromedp.Navigate(e.url+"/console/orders"))
	h.shot("orders-narrow-dark")
	h.do("wide, light", chromedp.EmulateViewport(1280, 860), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		return err
	}))

	// A viewer: Re-sync is disabled, and the server refuses it anyway.
	h.load("sign out", chromedp.Navigate(e.url+"/console/"))
	h.load("sign out", chromedp.Click(chromedp.CSS("header form button")))
	h.signIn(e.url, "eve-token")
	h.load("open the order as viewer", chromedp.Navigate(e.url+"/console/orders/"+codes[0]))
	if hint := h.text("form.act"); !strings.Contains(hint, "Only an operator") {
		t.Errorf("a viewer's re-sync form says %q", hint)
	}
	disabled, err := chromedp.Run(h.ctx, chromedp.AttributeValue(chromedp.CSS("form.act button"), "disabled"))
	if err != nil || !disabled.Exists {
		t.Errorf("a viewer's Re-sync button is not disabled (%v)", err)
	}
	h.shot("order-viewer")
	h.do("enable the button", chromedp.RemoveAttribute(chromedp.CSS("form.act button"), "disabled"))
	h.load("re-sync as viewer", chromedp.Click(chromedp.CSS("form.act button")))
	if body := h.text("body"); !strings.Contains(body, "viewers read, only operators act") {
		t.Errorf("a viewer's re-sync answers %q", body)
	}
	// The refusal is a console page with its way back, not the API's JSON.
	if kind, err := chromedp.Run(h.ctx, chromedp.Evaluate[string](`document.contentType`)); err != nil || kind != "text/html" ||
		h.absent(`header nav a[href="/console/orders"]`) || h.absent("#problem") || h.absent("a#back") {
		t.Errorf("a viewer's re-sync is answered with %q (%v), not a console page with the navigation and a way back", kind, err)
	}
	h.check()
}
