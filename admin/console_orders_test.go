package admin_test

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/console"
	"github.com/ordersync/ordersync/sim"
)

var exportViewLink = regexp.MustCompile(`href="(/console/export/download\?[^"]+)"`)

// newConsoleEnv is the API with the two roles' tokens, sessions, exports
// and two orders from the simulator: A-1 paid by sim.DefaultBuyer, A-2
// pending. It returns the env and the two orders' codes.
func newConsoleEnv(t *testing.T) (*apiEnv, []string) {
	t.Helper()
	e := newAPIEnvWith(t, func(e *apiEnv, c *admin.Config) {
		c.Tokens, c.Audit, c.Sessions, c.Exports = roleTokens, e.db, e.db, e.db
	})
	return e, linksFirstPaid(t, e, "A-1", "A-2")
}

// linksFirstPaid creates a link (two Combos) per reference through the
// API, pays the first with sim.DefaultBuyer and tracks it, so that the
// mirror has it paid; it returns the links' order codes.
func linksFirstPaid(t *testing.T, e *apiEnv, refs ...string) []string {
	t.Helper()
	var codes []string
	for _, ref := range refs {
		var res ordersync.PaymentLinkResult
		body := `{"lineItems":[{"product":{"name":"Combo","price":"6.50"},"quantity":2}],"orderReference":"` + ref + `"}`
		if st := apiDo(t, e.url, "POST", "/v1/payment-links", "ops-token", body, &res); st != http.StatusOK {
			t.Fatalf("create %s: %d", ref, st)
		}
		codes = append(codes, res.OrderCode)
	}
	if _, err := e.sim.Pay(codes[0], sim.DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	if st := apiDo(t, e.url, "POST", "/v1/orders/track", "ops-token", `{"orderCode":"`+codes[0]+`"}`, nil); st != http.StatusOK {
		t.Fatalf("track: %d", st)
	}
	return codes
}

// TestConsoleOrders: the Orders page finds an order by its reference and
// by its buyer's email, refuses a bad filter naming it, links the export
// of its view, which the session downloads (and nothing without it); the
// Order page shows the detail and timeline; re-sync needs an operator and
// the form's CSRF token.
func TestConsoleOrders(t *testing.T) {
	t.Parallel()
	e, codes := newConsoleEnv(t)
	b := newBrowser(t, e.url)
	if resp := b.signIn("ops-token"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	for _, q := range []string{"A-1", sim.DefaultBuyer.Email} {
		resp, page := b.do("GET", "/console/orders?q="+url.QueryEscape(q), nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, codes[0]) || strings.Contains(page, codes[1]) {
			t.Errorf("search %q: %d, want only %s:\n%s", q, resp.StatusCode, codes[0], page)
		}
	}
	// A refusal names the fields by their labels on screen.
	resp, page := b.do("GET", "/console/orders?minTotal=ten", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `<li><strong>Total from</strong>: &#34;ten&#34; is not an amount`) {
		t.Errorf("bad filter: %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.do("GET", "/console/orders?minTotal=10&maxTotal=5", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `<li><strong>Total up to</strong>: is below «Total from»: want «Total up to» at or above «Total from»</li>`) {
		t.Errorf("crossed totals: %d\n%s", resp.StatusCode, page)
	}

	// The export of the view "paid orders" by the session.
	_, page = b.do("GET", "/console/orders?status=PAID", nil)
	href := exportViewLink.FindStringSubmatch(page)
	if href == nil {
		t.Fatalf("no export link:\n%s", page)
	}
	link := strings.ReplaceAll(href[1], "&amp;", "&")
	resp, body := b.do("GET", link, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export by session: %d %s", resp.StatusCode, body)
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\uFEFF"))).ReadAll()
	if err != nil || len(rows) != 2 || !strings.Contains(strings.Join(rows[1], ","), codes[0]) || !strings.HasPrefix(body, "\uFEFF") {
		t.Errorf("export of the paid orders, spreadsheet-safe: %v %q", err, rows)
	}
	anon := newBrowser(t, e.url)
	if resp, body := anon.do("GET", link, nil); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/sign-in?next=") || strings.Contains(body, codes[0]) {
		t.Errorf("export without a session: %d to %q, want 303 to sign in", resp.StatusCode, resp.Header.Get("Location"))
	}

	resp, page = b.do("GET", "/console/orders/"+codes[0], nil)
	for _, want := range []string{"A-1", sim.DefaultBuyer.Email, "Timeline", "Status first seen → PENDING", "PENDING → PAID", "Re-sync now"} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("order page: %d, lacks %q", resp.StatusCode, want)
		}
	}
	if strings.Contains(page, "disabled") {
		t.Errorf("an operator's re-sync button is disabled")
	}
	if resp, _ := b.do("POST", "/console/orders/"+codes[0]+"/resync", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("re-sync without CSRF token: %d, want 403", resp.StatusCode)
	}
	// POST-redirect-GET: the re-sync sends the browser to the order's
	// page, which says what the fetch found once; reloading that page
	// fetches nothing and records no action.
	tracks := func() int {
		p, err := e.db.ListAudit(t.Context(), ordersync.AuditFilter{Action: "order.track", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Records)
	}
	before := tracks()
	resp, _ = b.do("POST", "/console/orders/"+codes[0]+"/resync", url.Values{"csrf": {b.csrf(page)}})
	back := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || back != "/console/orders/"+codes[0]+"?account=default" {
		t.Fatalf("re-sync: %d to %q, want 303 to the order's page", resp.StatusCode, back)
	}
	if _, page = b.do("GET", back, nil); !strings.Contains(page, `id="flash">Re-synced: fetched now, the order is PAID`) {
		t.Errorf("the order's page after the re-sync does not say so:\n%s", page)
	}
	if _, page = b.do("GET", back, nil); strings.Contains(page, "Re-synced") || tracks() != before+1 {
		t.Errorf("the reload: says re-synced again or re-synced again (%d tracks, want %d)", tracks(), before+1)
	}

	viewer := newBrowser(t, e.url)
	viewer.signIn("eve-token")
	_, page = viewer.do("GET", "/console/orders/"+codes[0], nil)
	if !strings.Contains(page, "disabled") {
		t.Errorf("a viewer's re-sync button is not disabled")
	}
	// A viewer's forced re-sync is refused with a console page saying why.
	if resp, page := viewer.do("POST", "/console/orders/"+codes[0]+"/resync", url.Values{"csrf": {viewer.csrf(page)}}); resp.StatusCode != http.StatusForbidden ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(page, "<h1>Not allowed</h1>") ||
		!strings.Contains(page, "eve is a viewer: viewers read, only operators act. Nothing was done (Re-sync (track) an order: order.track).") {
		t.Errorf("re-sync as viewer: %d %s, want 403 as a page saying why:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}

	// The zone switch is remembered and shows times in UTC.
	resp, _ = b.do("GET", "/console/zone?zone=utc&back=/console/orders", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/orders" {
		t.Errorf("zone switch: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, page = b.do("GET", "/console/orders", nil); !strings.Contains(page, " UTC</time>") {
		t.Errorf("times not in UTC after the switch:\n%s", page)
	}
	if resp, _ = b.do("GET", "/console/zone?zone=utc&back=//evil.example/", nil); resp.Header.Get("Location") != "/console/orders" {
		t.Errorf("zone switch goes back off the console: %s", resp.Header.Get("Location"))
	}
}

var orderCodeCell = regexp.MustCompile(`<td[^>]*><a href="/console/orders/([^"?]+)\?`)

// linkByID is the href of the element with the id on page, "" when none.
func linkByID(page, id string) string {
	m := regexp.MustCompile(`<a href="([^"]+)"[^>]*id="` + id + `"`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// TestConsoleOrdersLists: the Orders page counts its orders (exactly up
// to its bound, then "more than"), pages forwards and back to exactly
// the pages it came through, names its sorts in words and offers day
// presets in the page's zone.
func TestConsoleOrdersLists(t *testing.T) {
	t.Parallel()
	e, codes := newConsoleEnv(t)
	codes = append(codes, linksFirstPaid(t, e, "A-3")...)
	b := newBrowser(t, e.url)
	b.signIn("ops-token")

	_, page := b.do("GET", "/console/orders", nil)
	if !strings.Contains(page, `<span id="total">3</span> in all`) {
		t.Errorf("no exact count of 3:\n%s", page)
	}
	if !strings.Contains(page, `<option value="created_desc" selected>Newest first</option>`) || strings.Contains(page, ">created_desc<") {
		t.Errorf("sorts not in words:\n%s", page)
	}
	restore := console.SetCountBound(2)
	_, page = b.do("GET", "/console/orders", nil)
	restore()
	if !strings.Contains(page, `<span id="more">more than 2</span>`) || strings.Contains(page, `id="total"`) {
		t.Errorf("past its bound, the count does not say more than 2:\n%s", page)
	}

	// One order a page, newest first: forwards to the last page, then
	// back, each page holding the order it held on the way there.
	shown := func(page string) []string {
		var out []string
		for _, m := range orderCodeCell.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return out
	}
	want := []string{codes[2], codes[1], codes[0]}
	path := "/console/orders?limit=1"
	var pages []string
	for i := range want {
		_, page = b.do("GET", path, nil)
		if got := shown(page); len(got) != 1 || got[0] != want[i] {
			t.Fatalf("page %d shows %q, want %s", i+1, got, want[i])
		}
		if (linkByID(page, "prevpage") == "") != (i == 0) || (linkByID(page, "nextpage") == "") != (i == len(want)-1) {
			t.Errorf("page %d: previous %q, next %q", i+1, linkByID(page, "prevpage"), linkByID(page, "nextpage"))
		}
		pages = append(pages, path)
		path = linkByID(page, "nextpage")
	}
	for i := len(want) - 1; i > 0; i-- {
		prev := linkByID(page, "prevpage")
		_, page = b.do("GET", prev, nil)
		if got := shown(page); len(got) != 1 || got[0] != want[i-1] {
			t.Errorf("back from page %d shows %q, want %s", i+1, got, want[i-1])
		}
	}
	if linkByID(page, "prevpage") != "" || linkByID(page, "firstpage") != "" {
		t.Errorf("the first page offers a previous page")
	}

	// Presets are days in the page's zone: today's link selects today's
	// orders, yesterday ends where today begins.
	_, page = b.do("GET", "/console/orders?status=PAID", nil)
	zone := regexp.MustCompile(`Dates are days in ([^ ]+)`).FindStringSubmatch(page)
	loc, err := ordersync.ParseZone(zone[1])
	if err != nil {
		t.Fatalf("zone %q: %v", zone[1], err)
	}
	presets := regexp.MustCompile(`<p id="createdpresets">(.*)</p>`).FindStringSubmatch(page)
	today := time.Now().In(loc).Format(time.DateOnly)
	for _, w := range []string{">Today<", ">Yesterday<", ">Last 7 days<", ">This month<", ">Last month<",
		"createdFrom=" + today, "createdTo=" + today, "status=PAID"} {
		if presets == nil || !strings.Contains(presets[1], w) {
			t.Errorf("created presets lack %q: %v", w, presets)
		}
	}
	todayLink := regexp.MustCompile(`href="([^"]+)">Today<`).FindStringSubmatch(presets[1])
	_, page = b.do("GET", strings.ReplaceAll(todayLink[1], "&amp;", "&"), nil)
	if got := shown(page); len(got) != 2 || !strings.Contains(page, `aria-current="true">Today<`) {
		t.Errorf("today's paid orders: %q, want the two paid today, Today current", got)
	}
}
