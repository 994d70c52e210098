package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
)

// newPagesEnv is the API with the two roles' tokens, sessions, the audit
// trail, reports and the overview, and orders to show: two links from the
// simulator (one paid), a paid order in EUR, an endpoint whose delivery
// failed and a dead letter.
func newPagesEnv(t *testing.T) *apiEnv {
	t.Helper()
	e := newAPIEnvWith(t, func(e *apiEnv, c *admin.Config) {
		c.Tokens, c.Audit, c.Sessions, c.Exports, c.Reports, c.Overview = roleTokens, e.db, e.db, e.db, e.db, e.db
		// The refresh the test waits for, sooner than the default 5 s:
		// whether the script refreshes is the subject, not how often.
		c.OverviewRefresh = 300 * time.Millisecond
	})
	codes := linksFirstPaid(t, e, "B-1", "B-2")
	now := time.Now().UTC()
	mirrorOrders(t, e.db, now, [5]string{"eur1", "PAID", "EUR", "12.5", now.Add(-time.Hour).Format("2006-01-02T15:04:05.000Z")})
	ctx := context.Background()
	if _, err := e.db.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "fulfilment", URL: "https://fulfilment.example/hooks/ordersync",
		Events: ordersync.HookEvents, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}); err != nil {
		t.Fatal(err)
	}
	if err := e.db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{
		{WebhookID: "w-ok", EndpointID: "fulfilment", Event: ordersync.HookOrderPaid, Account: ordersync.DefaultAccount,
			OrderCode: codes[0], Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: 200, At: now.Add(-10 * time.Minute)},
		{WebhookID: "w-bad", EndpointID: "fulfilment", Event: ordersync.HookOrderStatusChanged, Account: ordersync.DefaultAccount,
			OrderCode: codes[1], Outcome: ordersync.DeliveryDeadLettered, Attempts: 8, Status: 503, Detail: "service unavailable",
			At: now.Add(-3 * time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	addDeadLetters(t, e.db, now.Add(-time.Hour), 1)
	return e
}

// TestConsolePagesInBrowser opens the Overview, Daily totals and Audit
// pages in chromium: the Overview refreshes a figure without reloading
// once the mirror changes, Daily totals draws its chart and downloads
// the CSV of its table, Audit filters by who and what. Any error a page
// reports fails it; each page is saved as a screenshot when asked (the
// Overview's by TestDemoOverviewInBrowser, over the demo's two stores).
func TestConsolePagesInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	e := newPagesEnv(t)
	h.signIn(e.url, "ops-token")

	// The Overview, refreshed by its script: a dead letter more shows
	// without a reload (the marker set on the page survives).
	before := h.text(`[data-figure="dead-letters"]`)
	if before != "1" {
		t.Errorf("dead letters on the overview: %q, want 1", before)
	}
	h.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.loadedOnce = true`))
	addDeadLetters(t, e.db, time.Now().Add(-time.Hour), 1)
	h.do("wait for the refresh", chromedp.Poll[chromedp.Void](`document.querySelector('[data-figure="dead-letters"]').textContent === "2"`,
		chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(20*time.Second)))
	kept, err := chromedp.Run(h.ctx, chromedp.Evaluate[bool](`window.loadedOnce === true`))
	if err != nil || !kept {
		t.Errorf("the overview reloaded to refresh (%v)", err)
	}
	if eps := h.text(`tbody[data-table="endpoints"]`); !strings.Contains(eps, "fulfilment") || !strings.Contains(eps, "HTTP 503") {
		t.Errorf("endpoints on the overview: %q", eps)
	}
	h.check()

	// Daily totals: the last 30 days, a chart per currency, the CSV.
	h.load("open Daily totals", chromedp.Click(chromedp.CSS(`nav a[href="/console/totals"]`)))
	rows := h.text("table.totals tbody")
	if !strings.Contains(rows, "EUR") || !strings.Contains(rows, "USD") || !strings.Contains(rows, "12.50") {
		t.Errorf("the totals table: %q", rows)
	}
	charts, err := chromedp.Run(h.ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.chart svg rect").length`))
	if err != nil || charts < 2 {
		t.Errorf("%d bars drawn (%v), want one per currency at least", charts, err)
	}
	csv := readCSV(t, h.download(`a[href^="/console/totals.csv"]`))
	n, _ := chromedp.Run(h.ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.totals tbody tr").length`))
	if len(csv) != n+1 || strings.Join(csv[0], ",") != strings.Join(api.DailyCSVHeader, ",") {
		t.Errorf("the CSV has %d rows for a table of %d: %q", len(csv), n, csv)
	}

	// Audit: ops's link creations.
	h.load("open Audit", chromedp.Click(chromedp.CSS(`nav a[href="/console/audit"]`)))
	h.do("filter", chromedp.SendKeys(chromedp.CSS("#actor"), "ops"), chromedp.SendKeys(chromedp.CSS("#action"), "payment-link.create"))
	h.load("apply the filter", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	trail := h.text("table.audit tbody")
	if got := strings.Count(trail, "payment-link.create"); got != 2 || strings.Contains(trail, "order.track") {
		t.Errorf("the filtered trail (%d creations): %q", got, trail)
	}
	loc, _ := chromedp.Run(h.ctx, chromedp.Location())
	if !strings.Contains(loc, "actor=ops") || !strings.Contains(loc, "action=payment-link.create") {
		t.Errorf("the filter is not in the URL: %s", loc)
	}
	h.shot("audit")
	h.check()
}
