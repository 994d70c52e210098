package admin_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/store"
)

// exportNow is the clock of the export tests: noon UTC on 27 November,
// 06:00 in El Salvador and 13:00 in Madrid, so "yesterday" is the 26th in
// both stores.
var exportNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// hostileBuyer is a buyer's name a spreadsheet would run as a formula.
const hostileBuyer = `=HYPERLINK("http://evil.example/","Pay here")`

// exportOrder is one order of the export tests' data set: its store, code,
// statuses as fetched one after another, total, creation time and buyer
// (name and phone; a status marked * carries the payment too).
type exportOrder struct {
	account, code, statuses, total, created, buyer, phone string
}

// exportDataSet is two stores over three days (25, 26 and 27 November):
// "sv" sells in USD in America/El_Salvador, "md" in EUR in Europe/Madrid;
// paid, finalized, pending, cancelled and reversed orders, a buyer whose
// name is a formula and phones a spreadsheet would read as numbers.
var exportDataSet = []exportOrder{
	{"sv", "s1", "PENDING>PAID", "10.00", "2026-11-25T18:00:00Z", "Ana López", "+503 7365 7811"},
	// 23:30 on the 25th in El Salvador.
	{"sv", "s2", "PAID", "12.50", "2026-11-26T05:30:00Z", hostileBuyer, "73657811"},
	{"sv", "s3", "PAID>FINALIZED", "7.25", "2026-11-26T15:00:00Z", "José Peña", "+50370000003"},
	{"sv", "s4", "PENDING", "5.00", "2026-11-26T16:00:00Z", "", ""},
	{"sv", "s5", "PAID>CANCELLED", "30.00", "2026-11-26T17:00:00Z", "Reversed Buyer", "7000-0005"},
	{"sv", "s6", "PAID", "4.10", "2026-11-26T20:00:00Z", "María", "+50370000006"},
	{"sv", "s7", "PAID", "99.99", "2026-11-27T11:00:00Z", "Today", "+50370000007"},
	{"md", "m1", "PAID", "20.00", "2026-11-25T22:30:00Z", "Ñuño", "+34 600 000 001"},
	{"md", "m2", "PAID", "3.50", "2026-11-26T10:00:00Z", hostileBuyer, "600000002"},
	{"md", "m3", "CANCELLED", "8.00", "2026-11-26T11:00:00Z", "", ""},
	// 23:30 on the 26th in Madrid, the 26th in UTC too.
	{"md", "m4", "PAID>FINALIZED", "15.75", "2026-11-26T22:30:00Z", "Élodie", "+34600000004"},
	// 00:30 on the 27th in Madrid.
	{"md", "m5", "PAID", "1.00", "2026-11-26T23:30:00Z", "Late", "+34600000005"},
}

// mirrorExportDataSet writes exportDataSet to db: each status as a fetch,
// the first a minute after the order's creation, each next an hour later.
func mirrorExportDataSet(t *testing.T, db *store.DB) {
	t.Helper()
	zones := map[string][2]string{"sv": {"USD", "America/El_Salvador"}, "md": {"EUR", "Europe/Madrid"}}
	for i, o := range exportDataSet {
		paid := false
		for step, status := range strings.Split(o.statuses, ">") {
			payment := "null"
			if paid = paid || status == "PAID" || status == "FINALIZED"; paid {
				b, _ := json.Marshal(map[string]any{"authorizationCode": fmt.Sprintf("%06d", 200+i),
					"buyer": map[string]string{"name": o.buyer, "email": fmt.Sprintf("b%d@example.com", i), "phone": o.phone}})
				payment = string(b)
			}
			doc := fmt.Sprintf(`{"orderId":"%d","orderCode":%q,"orderReference":"ref-%s","name":"Pedido","orderStatus":%q,
"lineItems":[{"productId":"%d","sku":"0042","name":"Combo","price":%s,"quantity":1,"subTotal":%s}],
"subtotal":%s,"totalDetails":{"shippingAmount":0,"discountAmount":0,"surchargeAmount":0},"total":%s,
"store":{"name":%q,"currencyCode":%q,"timezone":%q},"payment":%s,"created":%q}`,
				7000+i, o.code, o.code, status, 100+i, o.total, o.total, o.total, o.total, o.account,
				zones[o.account][0], zones[o.account][1], payment, o.created)
			order, err := ordersync.DecodeOrder([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			seq, err := db.AllocateFetchSeq(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ApplyOrders(context.Background(), []ordersync.ApplyParams{{Account: o.account, Order: order,
				Seq: seq, FetchedAt: order.Created.Time.Add(time.Minute + time.Duration(step)*time.Hour), Cause: ordersync.CauseTrack}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// exportBase starts the console over the export data set, with the roles'
// tokens, and returns its address.
func exportBase(t *testing.T, edit func(*admin.Config)) (string, *store.DB) {
	t.Helper()
	db := openTestDB(t)
	mirrorExportDataSet(t, db)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Account, c.Stores = "sv", []string{"sv", "md"}
		c.Reports, c.Exports, c.Clock = db, db, func() time.Time { return exportNow }
		if edit != nil {
			edit(c)
		}
	})
	return base, db
}

var (
	formSelect   = regexp.MustCompile(`(?s)<select id="[^"]*" name="([^"]+)">(.*?)</select>`)
	formSelected = regexp.MustCompile(`<option value="([^"]*)" selected>|<option selected>([^<]*)</option>`)
	formInput    = regexp.MustCompile(`<input (?:id="[^"]*" )?name="([^"]+)"[^>]*value="([^"]*)"`)
	formHidden   = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// formDefaults reads the values the Export form on page would send as it
// is: each selector's chosen option (or its first), each field's value.
func formDefaults(t *testing.T, page string) url.Values {
	t.Helper()
	start := strings.Index(page, `<form method="get" action="/console/export/download"`)
	end := strings.Index(page[max(start, 0):], "</form>")
	if start < 0 || end < 0 {
		t.Fatalf("no Export form:\n%s", page)
	}
	form := page[start : start+end]
	v := url.Values{}
	for _, m := range formHidden.FindAllStringSubmatch(form, -1) {
		v.Add(m[1], html.UnescapeString(m[2]))
	}
	for _, m := range formInput.FindAllStringSubmatch(form, -1) {
		if m[1] != "csrf" {
			v.Set(m[1], html.UnescapeString(m[2]))
		}
	}
	for _, m := range formSelect.FindAllStringSubmatch(form, -1) {
		if s := formSelected.FindStringSubmatch(m[2]); s != nil {
			v.Set(m[1], html.UnescapeString(s[1]+s[2]))
		} else if first := regexp.MustCompile(`<option value="([^"]*)"`).FindStringSubmatch(m[2]); first != nil {
			v.Set(m[1], html.UnescapeString(first[1]))
		}
	}
	return v
}

// listedOrders follows the Orders link the Export page gives for its
// filter and returns the count the page says and its rows' sum per
// currency.
func listedOrders(t *testing.T, b *browser, page string) (int, map[string]string, []string) {
	t.Helper()
	m := regexp.MustCompile(`<a href="([^"]+)" id="exportorders">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the Export page has no link to its orders:\n%s", page)
	}
	resp, list := b.do("GET", html.UnescapeString(m[1]), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the orders of the export: %d\n%s", resp.StatusCode, list)
	}
	total := regexp.MustCompile(`<span id="total">(\d+)</span>`).FindStringSubmatch(list)
	if total == nil {
		t.Fatalf("the orders page has no count:\n%s", list)
	}
	n, _ := strconv.Atoi(total[1])
	sums := map[string]ordersync.Amount{}
	var codes []string
	for _, row := range regexp.MustCompile(`<td class="num"[^>]*>([0-9.]+) ([A-Z]{3})</td>`).FindAllStringSubmatch(list, -1) {
		sums[row[2]] = sums[row[2]].Add(ordersync.MustAmount(row[1]))
	}
	for _, c := range regexp.MustCompile(`<td[^>]*><a href="/console/orders/([^?"]+)\?`).FindAllStringSubmatch(list, -1) {
		codes = append(codes, c[1])
	}
	out := map[string]string{}
	for cur, a := range sums {
		out[cur] = a.String()
	}
	return n, out, codes
}

// readExport reads a downloaded CSV: whether it began with a byte-order
// mark, and its records.
func readExport(t *testing.T, body string) (bool, [][]string) {
	t.Helper()
	bom := strings.HasPrefix(body, "\uFEFF")
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\uFEFF"))).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("the export is not CSV: %v\n%s", err, body)
	}
	return bom, recs
}

// exportSums are a file's row count and its totals' sum per currency.
func exportSums(t *testing.T, recs [][]string) (int, map[string]string, []string) {
	t.Helper()
	ti, ci, oi := slices.Index(recs[0], "total"), slices.Index(recs[0], "currency"), slices.Index(recs[0], "order_code")
	sums := map[string]ordersync.Amount{}
	var codes []string
	for _, r := range recs[1:] {
		sums[r[ci]] = sums[r[ci]].Add(ordersync.MustAmount(r[ti]))
		codes = append(codes, strings.TrimPrefix(r[oi], "'"))
	}
	out := map[string]string{}
	for cur, a := range sums {
		out[cur] = a.String()
	}
	return len(recs) - 1, out, codes
}

// TestExportFormDefaults: the Export page's form, sent as it is, gives a
// spreadsheet-safe file of the default store's orders in its zone, and
// its rows are the orders the same filter lists on Orders (count, sum and
// codes); chosen as a finance person would (the second store, yesterday,
// by paid, collected) it still is, and names store, day and zone.
func TestExportFormDefaults(t *testing.T) {
	t.Parallel()
	base, _ := exportBase(t, nil)
	b := newBrowser(t, base)
	b.signIn("eve-token")

	resp, page := b.do("GET", "/console/export", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the Export page: %d\n%s", resp.StatusCode, page)
	}
	if !strings.Contains(page, "America/El_Salvador (UTC−06:00)") {
		t.Errorf("the page does not say the store's zone with its offset:\n%s", page)
	}
	form := formDefaults(t, page)
	if form.Get("kind") != "orders" || form.Get("format") != "spreadsheet" || form.Get("account") != "sv" || form.Get("tz") != "" {
		t.Errorf("the form's defaults: %v", form)
	}
	resp, body := b.do("GET", "/console/export/download?"+form.Encode(), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the default download: %d\n%s", resp.StatusCode, body)
	}
	_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if params["filename"] != "orders_store-sv_all-days_America-El_Salvador.csv" {
		t.Errorf("the default file's name: %q", resp.Header.Get("Content-Disposition"))
	}
	bom, recs := readExport(t, body)
	if !bom || !slices.Contains(recs[0], "created_at (America/El_Salvador, UTC−06:00)") {
		t.Errorf("the default file is not spreadsheet-safe: byte-order mark %v, header %q", bom, recs[0])
	}
	n, sums, codes := exportSums(t, recs)
	ln, lsums, lcodes := listedOrders(t, b, page)
	slices.Sort(codes)
	slices.Sort(lcodes)
	if n != 7 || n != ln || fmt.Sprint(sums) != fmt.Sprint(lsums) || !slices.Equal(codes, lcodes) {
		t.Errorf("the default file has %d rows %v %v; the listing %d %v %v", n, sums, codes, ln, lsums, lcodes)
	}

	// Madrid's collected orders paid yesterday, Madrid's day.
	q := url.Values{"account": {"md"}, "days": {"yesterday"}, "by": {"paid"}, "status": {"collected"}}
	resp, page = b.do("GET", "/console/export?"+q.Encode(), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(html.UnescapeString(page), "Europe/Madrid (UTC+01:00)") {
		t.Fatalf("the Export page for md: %d\n%s", resp.StatusCode, page)
	}
	form = formDefaults(t, page)
	resp, body = b.do("GET", "/console/export/download?"+form.Encode(), nil)
	_, params, _ = mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if resp.StatusCode != http.StatusOK || params["filename"] != "orders_store-md_2026-11-26_Europe-Madrid.csv" {
		t.Fatalf("md's yesterday: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Disposition"), body)
	}
	bom, recs = readExport(t, body)
	n, sums, codes = exportSums(t, recs)
	ln, lsums, lcodes = listedOrders(t, b, page)
	slices.Sort(codes)
	slices.Sort(lcodes)
	// m1 was paid on the 25th, m3 never, m5 on the 27th in Madrid.
	if !bom || n != 2 || n != ln || sums["EUR"] != "19.25" || fmt.Sprint(sums) != fmt.Sprint(lsums) || !slices.Equal(codes, []string{"m2", "m4"}) || !slices.Equal(codes, lcodes) {
		t.Errorf("md's yesterday: %d rows %v %v; the listing %d %v %v", n, sums, codes, ln, lsums, lcodes)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(recs[0], name)] }
	for _, rec := range recs[1:] {
		if strings.TrimPrefix(col(rec, "order_code"), "'") == "m2" {
			if got := col(rec, "buyer_name"); got != "'"+hostileBuyer {
				t.Errorf("the formula buyer is written %q", got)
			}
			if got := col(rec, "buyer_phone"); got != "'600000002" {
				t.Errorf("the phone is written %q", got)
			}
			if got := col(rec, "created_at (Europe/Madrid, UTC+01:00)"); got != "2026-11-26 11:00:00" {
				t.Errorf("created_at is written %q", got)
			}
			if got := col(rec, "created_at_utc (UTC)"); got != "2026-11-26 10:00:00" {
				t.Errorf("created_at_utc is written %q", got)
			}
		}
	}

	// A bad form is the page again, naming the field by its label.
	resp, page = b.do("GET", "/console/export/download?days=someday&tz=Mars/Olympus&account=md", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "<strong>Days</strong>") || !strings.Contains(page, "<strong>Zone</strong>") {
		t.Errorf("a bad form: %d\n%s", resp.StatusCode, page)
	}
	// Every store's status changes of the last 7 days in UTC, as JSON Lines.
	q = url.Values{"account": {"*"}, "days": {"last-7-days"}, "kind": {"status-changes"}, "format": {"jsonl"}, "tz": {"utc"}}
	resp, body = b.do("GET", "/console/export/download?"+q.Encode(), nil)
	_, params, _ = mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if resp.StatusCode != http.StatusOK || params["filename"] != "status-changes_all-stores_2026-11-21_2026-11-27_UTC.jsonl" ||
		strings.Count(body, "\n") < len(exportDataSet) || !strings.HasPrefix(body, `{"order_code":`) {
		t.Errorf("all stores' status changes: %d %q\n%.200s", resp.StatusCode, params["filename"], body)
	}
	resp, page = b.do("GET", "/console/export/download?account=ghost", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "known stores: sv, md") {
		t.Errorf("an unknown store: %d\n%s", resp.StatusCode, page)
	}
}

// TestExportFormFromOrders: the Orders page's export links carry its
// filter: its download is the form's default file of the listed orders,
// and its form opens with the listing's days (a daily total's link, by
// paid, the last day included) and zone.
func TestExportFormFromOrders(t *testing.T) {
	t.Parallel()
	base, _ := exportBase(t, nil)
	b := newBrowser(t, base)
	b.signIn("eve-token")
	// As Daily totals links md's paid figure of the 26th.
	list := url.Values{"account": {"md"}, "tz": {"Europe/Madrid"}, "currency": {"EUR"}, "count": {"exact"},
		"paidFrom": {"2026-11-26"}, "paidTo": {"2026-11-27"}}
	_, page := b.do("GET", "/console/orders?"+list.Encode(), nil)
	view := regexp.MustCompile(`<a href="([^"]+)" download id="exportview">`).FindStringSubmatch(page)
	more := regexp.MustCompile(`<a href="([^"]+)" id="exportform">`).FindStringSubmatch(page)
	if view == nil || more == nil {
		t.Fatalf("Orders has no export links:\n%s", page)
	}
	resp, body := b.do("GET", html.UnescapeString(view[1]), nil)
	_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if resp.StatusCode != http.StatusOK || params["filename"] != "orders_store-md_2026-11-26_Europe-Madrid.csv" {
		t.Fatalf("Export this view: %d %q\n%s", resp.StatusCode, params["filename"], body)
	}
	bom, recs := readExport(t, body)
	n, sums, _ := exportSums(t, recs)
	if !bom || n != 2 || sums["EUR"] != "19.25" {
		t.Errorf("Export this view: byte-order mark %v, %d rows, %v", bom, n, sums)
	}
	resp, page = b.do("GET", html.UnescapeString(more[1]), nil)
	form := formDefaults(t, page)
	if resp.StatusCode != http.StatusOK || form.Get("by") != "paid" || form.Get("from") != "2026-11-26" || form.Get("to") != "2026-11-26" ||
		form.Get("tz") != "Europe/Madrid" || form.Get("currency") != "EUR" || form.Get("account") != "md" {
		t.Errorf("the form from Orders: %d %v", resp.StatusCode, form)
	}
	// Orders in the store's zone, as the page shows without a tz: the form
	// leaves the zone to the store, so choosing another store there takes
	// that store's zone.
	_, page = b.do("GET", "/console/orders?account=sv", nil)
	if more = regexp.MustCompile(`<a href="([^"]+)" id="exportform">`).FindStringSubmatch(page); more == nil || strings.Contains(more[1], "tz=") {
		t.Errorf("Orders in the store's zone links the form with a zone: %q", more)
	}
}

// TestExportRoutes: the Export page and its download are read routes of
// the console: a viewer and an operator get them, a request without a
// session is sent to sign in and reads nothing, a rebound Host is refused
// by the guard; each download is in the audit trail by who made it, and
// shares the export endpoints' limit of exports at once.
func TestExportRoutes(t *testing.T) {
	t.Parallel()
	base, db := exportBase(t, nil)
	for _, path := range []string{"/console/export?account=md", "/console/export/download?account=md&days=yesterday&by=paid"} {
		anon := newBrowser(t, base)
		resp, body := anon.do("GET", path, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/sign-in?"+(url.Values{"next": {path}}).Encode() || strings.Contains(body, "m2") {
			t.Errorf("GET %s without a session: %d to %q", path, resp.StatusCode, resp.Header.Get("Location"))
		}
		for _, token := range []string{"eve-token", "ops-token"} {
			b := newBrowser(t, base)
			b.signIn(token)
			resp, body := b.do("GET", path, nil)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "m2") && !strings.Contains(body, "<form") {
				t.Errorf("GET %s as %s: %d\n%.300s", path, token, resp.StatusCode, body)
			}
		}
	}
	trail, err := db.ListAudit(context.Background(), ordersync.AuditFilter{Action: "export.orders", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, r := range trail.Records {
		actors = append(actors, r.Actor+" "+r.Outcome+" "+r.Object)
	}
	slices.Sort(actors)
	want := "account=md&paidFrom=2026-11-25T23%3A00%3A00Z&paidTo=2026-11-26T23%3A00%3A00Z"
	if len(actors) != 2 || actors[0] != "eve ok "+want || actors[1] != "ops ok "+want {
		t.Errorf("the downloads' audit records: %q", actors)
	}

	// Without tokens the console is loopback's: a rebound name is refused.
	open := consoleServer(t, db, nil, func(c *admin.Config) { c.Exports = db })
	for _, path := range []string{"/console/export", "/console/export/download"} {
		if status, p := guardDo(t, open, "GET", path, "rebind.evil.example", "", "", "", ""); status != http.StatusForbidden || !strings.Contains(p.Title, "loopback") {
			t.Errorf("GET %s by a rebound name: %d %+v", path, status, p)
		}
	}
}

// TestExportDownloadLimit: a console download waits its turn with the
// API's exports: with the most running, it is refused with Retry-After
// and the refusal is in the audit trail.
func TestExportDownloadLimit(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 3, func(c *admin.Config, _ *http.Server) { c.MaxExports = 1 })
	e.hook.started, e.hook.release = make(chan struct{}, 2), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(e.url + "/v1/exports/orders")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-e.hook.started
	resp, b, _ := e.get(t, "/console/export/download?kind=status-changes")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a console download over the limit: %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if rec := e.nextAudit(t); rec.Action != "export.status-changes" || rec.Outcome != "503" || rec.Actor != "loopback" {
		t.Errorf("the refused download's audit record: %+v", rec)
	}
	close(e.hook.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec := e.nextAudit(t); rec.Action != "export.orders" || rec.Outcome != "ok" {
		t.Errorf("the API export's audit record: %+v", rec)
	}
	resp, b, _ = e.get(t, "/console/export/download?kind=order-lines&format=csv")
	if resp.StatusCode != http.StatusOK || bytesHasBOM(b) || !strings.HasPrefix(string(b), strings.Join(export.Columns(export.OrderLines), ",")) {
		t.Errorf("a plain CSV download after the limit freed: %d %.100s", resp.StatusCode, b)
	}
}

func bytesHasBOM(b []byte) bool { return strings.HasPrefix(string(b), "\uFEFF") }
