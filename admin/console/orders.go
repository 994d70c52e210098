package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console's Orders and Order pages: the listing's query in the URL,
// read by ordersync.ParseOrderQuery like the API's, and one order's detail and
// timeline.

// routeOrders adds the Orders and Order pages and the time-zone
// switch.
func (s *Console) routeOrders(mux Mux) {
	mux.HandleFunc("GET /console/orders", s.ordersPage)
	mux.HandleFunc("GET /console/orders/{code}", s.orderPage)
	mux.HandleFunc("POST /console/orders/{id}/resync", api.When(s.cfg.Follower != nil, "tracking", s.resyncOrder))
	mux.HandleFunc("GET /console/zone", s.switchZone)
}

// Console page sizes: a screenful, and at most what a page weighs well.
const (
	defaultConsoleLimit = 50
	maxConsoleLimit     = 200
)

// countBound is how far the Orders page counts: exactly up to it,
// "more than" past it, so a count stays within a page's time on any
// mirror. A URL with count=exact counts every order. A variable only for
// tests.
var countBound = 10000

// sortLabels are the Orders page's words for each sort, in OrderSorts'
// order.
var sortLabels = map[ordersync.OrderSort]string{
	ordersync.SortCreatedDesc: "Newest first",
	ordersync.SortCreatedAsc:  "Oldest first",
	ordersync.SortPaidDesc:    "Paid most recently first",
	ordersync.SortPaidAsc:     "Paid longest ago first",
	ordersync.SortTotalDesc:   "Largest total first",
	ordersync.SortTotalAsc:    "Smallest total first",
}

// Option is a choice of a selector: its value, its words, whether chosen.
type Option struct {
	Value, Label string
	Selected     bool
}

// PresetLink is a link to the same view over a preset's days.
type PresetLink struct {
	Label, URL string
	Current    bool
}

// OrdersView is the Orders page.
type OrdersView struct {
	// Query is the page's query as the form shows it; tz only when the
	// URL chose a zone, so a change of store takes the new store's.
	Query    url.Values
	Errors   map[string][]string
	Statuses []ordersync.Status
	Sorts    []Option
	Stores   []StoreOption
	// AllStores: the rows are of every store, and say whose.
	AllStores bool
	// DateZone names the zone the date filters' days are in, with its
	// offset.
	DateZone string
	Rows     []OrderRow
	// Total is how many orders the filter selects, exactly; nil when
	// there are more than the page counts (More then says the bound).
	Total *int
	More  string
	// NextURL, PrevURL and FirstURL page through the list by cursor: a
	// page's URL carries the cursors of the pages before it (prev), so
	// Previous goes back exactly to where that page began.
	NextURL, PrevURL, FirstURL string
	// CreatedPresets and PaidPresets are the view over a preset's days, in
	// DateZone.
	CreatedPresets, PaidPresets []PresetLink
	// Export downloads the view as the Export form's default file (a
	// spreadsheet-safe CSV); ExportForm opens the form with its filter.
	Export, ExportForm string
	Zone               ZoneSwitch
	Searched           bool
	// Behind says the search's match by name is as of AsOf, not current.
	Behind bool
	AsOf   string
	// Collected names the status group, for the status selector.
	Collected string
	// Q is the search as read (trimmed), for the empty state to name;
	// Filtered says other filters narrowed it too.
	Q        string
	Filtered bool
}

// Value is the query's value of the parameter name, for the form.
func (v *OrdersView) Value(name string) string { return v.Query.Get(name) }

// StatusList is the status filter as one comma list, when it is not one
// the selector offers (several statuses in the URL), so that the form
// keeps it; "" otherwise.
func (v *OrdersView) StatusList() string {
	st := v.Query["status"]
	if len(st) == 1 && !strings.Contains(st[0], ",") {
		return ""
	}
	return strings.Join(st, ",")
}

// OrderRow is one order of the Orders page.
type OrderRow struct {
	Code, Reference, Status, Buyer, Total, Currency string
	// Account is the order's store; Link its page.
	Account, Link string
	Created, Paid Moment
}

// orderLink is the console's page of an order of account.
func orderLink(account, code string) string {
	return "/console/orders/" + url.PathEscape(code) + "?" + url.Values{"account": {account}}.Encode()
}

func (s *Console) ordersPage(w http.ResponseWriter, r *http.Request) {
	form := r.URL.Query()
	view := &OrdersView{Query: form, Statuses: ordersync.Statuses, Collected: ordersync.StatusGroupCollected}
	for _, so := range ordersync.OrderSorts {
		view.Sorts = append(view.Sorts, Option{Value: string(so), Label: sortLabels[so],
			Selected: string(so) == form.Get("sort") || form.Get("sort") == "" && so == ordersync.SortCreatedDesc})
	}
	choice, err := s.cfg.Stores.Choose(r, true)
	view.Stores, view.AllStores = s.storeOptions(choice, true), choice.All
	var ve *ordersync.ValidationError
	if errors.As(err, &ve) {
		view.Stores = s.storeOptions(api.StoreChoice{Account: s.cfg.Stores.Default}, true)
		view.Errors = labelled(ve.Fields)
		s.page(w, r, http.StatusBadRequest, "orders.html", &Page{Title: "Orders", Data: view})
		return
	}
	zoneName := ""
	if !choice.All {
		zoneName = s.storeZone(r.Context(), choice.Account)
	}
	loc, mode := s.zoneOf(r, zoneName)
	view.Zone = ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.RequestURI()}
	// Dates of the form mean midnight in the zone the page shows, unless
	// the URL chose another.
	q := cloneValues(form)
	if q.Get("tz") == "" {
		q.Set("tz", loc.String())
	}
	dateZone := loc
	if z, err := ordersync.ParseZone(q.Get("tz")); err == nil {
		dateZone = z
	}
	now := s.cfg.Clock()
	view.DateZone = ordersync.ZoneLabel(dateZone, now, now)
	view.CreatedPresets = presetLinks(form, "createdFrom", "createdTo", now, dateZone)
	view.PaidPresets = presetLinks(form, "paidFrom", "paidTo", now, dateZone)
	for _, p := range ordersync.OrderQueryParams {
		if p != "tz" && p != "sort" && p != "count" && q.Get(p) != "" {
			view.Searched = true
			view.Filtered = view.Filtered || p != "q"
		}
	}
	view.Q = strings.TrimSpace(q.Get("q"))
	filter, err := api.OrderFilterOf(q, now)
	var qe *ordersync.QueryError
	if errors.As(err, &qe) {
		view.Errors = labelled(qe.Fields)
		s.page(w, r, http.StatusBadRequest, "orders.html", &Page{Title: "Orders", Data: view})
		return
	}
	filter.Account = choice.Account
	if filter.Limit == 0 {
		filter.Limit = defaultConsoleLimit
	}
	filter.Limit = min(filter.Limit, maxConsoleLimit)
	filter.Summary = true // the list shows no line items or metadata
	if !filter.Count {
		filter.Count, filter.CountUpTo = true, countBound
	}
	page, err := s.cfg.Orders.ListOrders(r.Context(), filter)
	if err != nil {
		s.office.Fail(w, "list orders", err, "")
		return
	}
	view.Behind, view.AsOf = page.Behind, page.AsOf.UTC().Format("2006-01-02 15:04:05 UTC")
	if t := page.Total; t != nil && filter.CountUpTo > 0 && *t > filter.CountUpTo {
		view.More = "more than " + thousands(filter.CountUpTo)
	} else {
		view.Total = t
	}
	for _, o := range page.Orders {
		row := OrderRow{Code: o.Order.OrderCode, Reference: o.Order.OrderReference, Status: string(o.Order.OrderStatus),
			Total: o.Order.Total.String(), Currency: o.Order.Store.CurrencyCode, Account: o.Account,
			Link:    orderLink(o.Account, o.Order.OrderCode),
			Created: momentOf(o.Order.Created.Time, loc), Paid: momentOfPtr(o.Sync.PaidAt, loc)}
		if p := o.Order.Payment; p != nil && p.Buyer != nil {
			row.Buyer = p.Buyer.Email
		}
		view.Rows = append(view.Rows, row)
	}
	view.NextURL, view.PrevURL, view.FirstURL = pageLinks(form, page.Next)
	// The export selects what the filter does, every page of it: at once
	// as the Export form's default file, or through the form.
	// The zone only when the URL or the browser chose one: otherwise the
	// form's, the chosen store's, so a change of store there takes its zone.
	exp := cloneValues(form)
	if exp.Get("tz") == "" && mode == "utc" {
		exp.Set("tz", "UTC")
	}
	view.ExportForm = exportLink(exp)
	view.Export = "/console/export/download" + strings.TrimPrefix(view.ExportForm, "/console/export")
	s.page(w, r, http.StatusOK, "orders.html", &Page{Title: "Orders", Data: view})
}

// pageLinks are the Orders page's next, previous and first pages of the
// view form (its cursor, and prev: the cursors of the pages before it,
// oldest first, without the first page's, which has none), "" where there
// is none. next is where the following page begins.
func pageLinks(form url.Values, next *ordersync.OrderCursor) (nextURL, prevURL, firstURL string) {
	cursor := form.Get("cursor")
	var stack []string
	if p := form.Get("prev"); p != "" {
		stack = strings.Split(p, ",")
	}
	at := func(cursor string, stack []string) string {
		v := cloneValues(form)
		v.Del("offset")
		v.Del("cursor")
		v.Del("prev")
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		if len(stack) > 0 {
			v.Set("prev", strings.Join(stack, ","))
		}
		return "/console/orders?" + v.Encode()
	}
	if next != nil {
		back := stack
		if cursor != "" {
			back = append(slices.Clone(stack), cursor)
		}
		nextURL = at(next.String(), back)
	}
	if cursor != "" {
		firstURL = at("", nil)
		prevURL = firstURL
		if n := len(stack); n > 0 {
			prevURL = at(stack[n-1], stack[:n-1])
		}
	}
	return nextURL, prevURL, firstURL
}

// presetLinks are the view form over each day preset by the range from
// and to (as createdFrom and createdTo), days in loc counted from now;
// a link is current when the view is over its days.
func presetLinks(form url.Values, from, to string, now time.Time, loc *time.Location) []PresetLink {
	var out []PresetLink
	for _, p := range dayPresets {
		f, t, ok := presetDays(p.Value, now, loc)
		if !ok {
			continue
		}
		v := cloneValues(form)
		for _, k := range []string{"cursor", "prev", "offset"} {
			v.Del(k)
		}
		v.Set(from, f.Format(time.DateOnly))
		v.Set(to, t.Format(time.DateOnly))
		out = append(out, PresetLink{Label: p.Short, URL: "/console/orders?" + v.Encode(),
			Current: form.Get(from) == v.Get(from) && form.Get(to) == v.Get(to)})
	}
	return out
}

// thousands writes n with a comma between each three digits (10,000).
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		if len(vs) > 0 && vs[0] != "" {
			out[k] = slices.Clone(vs)
		}
	}
	return out
}

// SetCountBound sets how far the Orders page counts, for a test that is
// not parallel; the func it returns restores the bound.
func SetCountBound(n int) (restore func()) {
	old := countBound
	countBound = n
	return func() { countBound = old }
}
