package admin_test

import (
	"fmt"
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
	t.Parallel()
	h := newHeadless(t)
	a, _ := officeEnv(t)
	base := a.url
	h.signIn(base, "eve-token")

	h.load("open Orders", chromedp.Navigate(base+"/console/orders"))
	h.load("open the Export form", chromedp.Click(chromedp.CSS("#exportform")))
	if zone := h.text("#exportzone"); !strings.Contains(zone, "America/El_Salvador (UTC−06:00)") {
		t.Errorf("the form's zone for the default store: %q", zone)
	}
	h.do("fill in the form",
		chromedp.SetValue(chromedp.CSS("#account"), "madrid"),
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
			if err != nil || at.Format("2006-01-02") < "2026-11-24" {
				t.Errorf("%s: %q is not a date and time a spreadsheet reads (%v)", header[i], rec[i], err)
			}
		}
		if day := col(rec, "paid_at (Europe/Madrid, UTC+01:00)"); !strings.HasPrefix(day, "2026-11-26 ") {
			t.Errorf("a row paid %q, not yesterday in Madrid", day)
		}
		if phone := col(rec, "buyer_phone"); !strings.HasPrefix(phone, "'+34") {
			t.Errorf("a phone with its country code is written %q, not as text", phone)
		}
	}
	formula, ok := byCode[fmt.Sprintf("MD%04d", officeFormula)]
	if !ok {
		t.Fatalf("the file's orders lack the formula buyer's: %d rows", len(recs)-1)
	}
	if got := col(formula, "buyer_name"); got != "'"+hostileBuyer {
		t.Errorf("the formula buyer is written %q", got)
	}
	if strings.Contains(body, ","+hostileBuyer) || strings.Contains(body, "\"=HYPERLINK") {
		t.Errorf("the formula is written raw somewhere in the file")
	}

	// The data set says which orders the file holds: madrid's collected
	// orders first paid on 26 November in Madrid.
	wantN, wantSum := officeCollected(t, "madrid", "2026-11-26", false)
	if wantN < 2 {
		t.Fatalf("the data set has %d such orders", wantN)
	}
	n, sums, _ := exportSums(t, recs)
	if n != wantN || sums["EUR"] != wantSum.String() || len(sums) != 1 {
		t.Errorf("the file has %d rows summing %v, the data set %d and %s EUR", n, sums, wantN, wantSum)
	}

	h.load("list the same orders", chromedp.Navigate(base+"/console/orders?account=madrid&status=collected&paidFrom=2026-11-26&paidTo=2026-11-27&tz=Europe/Madrid&count=exact"))
	if got := h.text("#total"); got != fmt.Sprint(n) {
		t.Errorf("the listing counts %s, the file %d rows", got, n)
	}
	h.check()
}
