package admin_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/export"
)

// TestExportInBrowser: in chromium, from Orders to the Export form, a
// finance person chooses the second store, yesterday, by paid, collected,
// and downloads the default format: the file opens safely in a
// spreadsheet (byte-order mark, the formula buyer neutralised, phones and
// codes kept as text, times a spreadsheet reads as dates in Madrid, the
// header naming the zone), and its rows are the orders the same filter
// lists, in count and sum.
func TestExportInBrowser(t *testing.T) {
	h := newHeadless(t)
	base, _ := exportBase(t, nil)
	h.signIn(base, "eve-token")

	h.load("open Orders", chromedp.Navigate(base+"/console/orders"))
	h.load("open the Export form", chromedp.Click(chromedp.CSS("#exportform")))
	if zone := h.text("#exportzone"); !strings.Contains(zone, "America/El_Salvador (UTC−06:00)") {
		t.Errorf("the form's zone for sv: %q", zone)
	}
	h.do("fill in the form",
		chromedp.SetValue(chromedp.CSS("#account"), "md"),
		chromedp.SetValue(chromedp.CSS("#days"), "yesterday"),
		chromedp.SetValue(chromedp.CSS("#by"), "paid"),
		chromedp.SetValue(chromedp.CSS("#status"), ordersync.StatusGroupCollected))
	h.shot("export")
	body := string(h.download("#export button[type=submit]"))

	bom, recs := readExport(t, body)
	if !bom {
		t.Errorf("the file has no byte-order mark: %.40q", body)
	}
	header := recs[0]
	created := slices.Index(header, "created_at (Europe/Madrid, UTC+01:00)")
	paid := slices.Index(header, "paid_at (Europe/Madrid, UTC+01:00)")
	if created < 0 || paid < 0 || slices.Index(header, "created_at_utc (UTC)") < 0 {
		t.Fatalf("the header does not name Madrid's zone: %q", header)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(header, name)] }
	byCode := map[string][]string{}
	for _, rec := range recs[1:] {
		byCode[strings.TrimPrefix(col(rec, "order_code"), "'")] = rec
		for _, i := range []int{created, paid} {
			at, err := time.ParseInLocation(export.SpreadsheetTime, rec[i], time.UTC)
			if err != nil || at.Format("2006-01-02") < "2026-11-25" {
				t.Errorf("%s: %q is not a date and time a spreadsheet reads (%v)", header[i], rec[i], err)
			}
		}
		if day := col(rec, "paid_at (Europe/Madrid, UTC+01:00)"); !strings.HasPrefix(day, "2026-11-26 ") {
			t.Errorf("a row paid %q, not yesterday in Madrid", day)
		}
	}
	m2, ok := byCode["m2"]
	if !ok || len(byCode) != 2 || byCode["m4"] == nil {
		t.Fatalf("the file's orders: %q", recs)
	}
	if got := col(m2, "buyer_name"); got != "'"+hostileBuyer {
		t.Errorf("the formula buyer is written %q", got)
	}
	if got := col(m2, "buyer_phone"); got != "'600000002" {
		t.Errorf("a phone of digits is written %q, not as text", got)
	}
	if got := col(byCode["m4"], "buyer_phone"); got != "'+34600000004" {
		t.Errorf("a phone with its country code is written %q", got)
	}
	if got := col(m2, "created_at (Europe/Madrid, UTC+01:00)"); got != "2026-11-26 11:00:00" {
		t.Errorf("m2's creation is written %q", got)
	}
	n, sums, _ := exportSums(t, recs)

	h.load("list the same orders", chromedp.Navigate(base+"/console/orders?account=md&status=collected&paidFrom=2026-11-26&paidTo=2026-11-27&tz=Europe/Madrid&count=exact"))
	if got := h.text("#total"); got != "2" || n != 2 || sums["EUR"] != "19.25" {
		t.Errorf("the listing counts %s, the file %d rows summing %v, want 2 and 19.25 EUR", got, n, sums)
	}
	if rows := h.text("table tbody"); !strings.Contains(rows, "3.50 EUR") || !strings.Contains(rows, "15.75 EUR") {
		t.Errorf("the listing's orders: %q", rows)
	}
	h.check()
}
