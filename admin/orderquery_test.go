package admin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
)

// TestListOrdersQuery finds orders through the API by a buyer's name and
// walks a listing by cursor; bad input is a 400 naming the parameter.
func TestListOrdersQuery(t *testing.T) {
	e := newAPIEnv(t)
	var codes []string
	for _, body := range []string{`{"amount":5.00}`, `{"amount":25.00}`, `{"amount":100.00}`} {
		codes = append(codes, e.createLink(t, body))
	}
	e.payAndTrack(t, codes[1], ordersync.Buyer{Name: "Íñigo Muñoz", Email: "inigo@example.com", Phone: "+34600000001"})
	type list struct {
		Orders []struct {
			OrderCode string `json:"orderCode"`
		} `json:"orders"`
		NextCursor *string `json:"nextCursor"`
		Total      *int    `json:"total"`
	}
	get := func(query string) list {
		t.Helper()
		status, b := e.do(t, "GET", "/v1/orders?"+query, "")
		if status != http.StatusOK {
			t.Fatalf("GET ?%s: %d %s", query, status, b)
		}
		var l list
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, q := range []string{"inigo", "MUÑ", "inigo@example.com", "+34600000001"} {
		if l := get("q=" + url.QueryEscape(q)); len(l.Orders) != 1 || l.Orders[0].OrderCode != codes[1] {
			t.Errorf("q=%s: %+v, want %s", q, l.Orders, codes[1])
		}
	}
	if l := get("minTotal=20&maxTotal=25.000&currency=usd"); len(l.Orders) != 1 || l.Orders[0].OrderCode != codes[1] {
		t.Errorf("minTotal=20&maxTotal=25.000: %+v", l.Orders)
	}
	if l := get("createdFrom=2999-01-01&tz=America/New_York"); len(l.Orders) != 0 {
		t.Errorf("created in the future: %+v", l.Orders)
	}
	if l := get("limit=5"); l.Total != nil || l.NextCursor != nil {
		t.Errorf("total %v and nextCursor %v without count=exact on the only page", l.Total, l.NextCursor)
	}
	// By total, in pages of one: the cursor carries the sort.
	var walked []string
	query := "sort=total_desc&limit=1"
	for range 5 {
		l := get(query)
		for _, o := range l.Orders {
			walked = append(walked, o.OrderCode)
		}
		if l.NextCursor == nil {
			break
		}
		query = "sort=total_desc&limit=1&cursor=" + url.QueryEscape(*l.NextCursor)
	}
	if want := []string{codes[2], codes[1], codes[0]}; !slices.Equal(walked, want) {
		t.Errorf("pages by total: %q, want %q", walked, want)
	}
	first := get("limit=1")
	for _, tc := range []struct{ query, param string }{
		{"tz=Mars/Olympus_Mons&createdFrom=2026-01-01", "tz"},
		{"createdFrom=2026-02-01&createdTo=2026-01-01", "createdTo"},
		{"paidFrom=2026-02-01T00:00:00Z&paidTo=2026-01-01T00:00:00Z", "paidTo"},
		{"createdFrom=last+week", "createdFrom"},
		{"cursor=not-a-cursor", "cursor"},
		{"cursor=" + url.QueryEscape(*first.NextCursor) + "&sort=total_asc", "cursor"},
		{"sort=price", "sort"},
		{"since=24h&createdFrom=2026-01-01", "since"},
		{"minTotal=ten", "minTotal"},
		{"minTotal=10&maxTotal=5", "maxTotal"},
		{"currency=dollars", "currency"},
		{"count=maybe", "count"},
	} {
		status, b := e.do(t, "GET", "/v1/orders?"+tc.query, "")
		var p api.Problem
		if err := json.Unmarshal(b, &p); status != http.StatusBadRequest || err != nil || len(p.Errors[tc.param]) == 0 {
			t.Errorf("GET ?%s: %d %s, want 400 naming %s", tc.query, status, b, tc.param)
		}
	}
}

// TestFilterQuery names a filter as a query string that ParseOrderQuery
// reads back to the same filter, paging aside.
func TestFilterQuery(t *testing.T) {
	now := time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)
	for _, in := range []string{
		"",
		"q=Jos%C3%A9+Pe%C3%B1a&status=PAID&status=FINALIZED&currency=eur&minTotal=10.50&maxTotal=99&sort=total_asc",
		"createdFrom=2026-03-08&createdTo=2026-03-09&tz=America/New_York&paidFrom=2026-03-08T10:00:00%2B01:00",
		"since=24h&paidTo=2026-10-01&limit=5&offset=2&count=exact",
		"status=collected&cancelledFrom=2026-03-08&finalizedTo=2026-03-09&reversedFrom=2026-03-08&reversedTo=2026-03-09&tz=Europe/Madrid",
	} {
		q, _ := url.ParseQuery(in)
		f, err := ordersync.ParseOrderQuery(api.OrderQueryOf(q), now)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		f.Account = "acme"
		named := admin.FilterQuery(f)
		back, err := url.ParseQuery(named)
		if err != nil {
			t.Fatal(err)
		}
		if back.Get("account") != "acme" || back.Has("limit") || back.Has("tz") {
			t.Errorf("%s named %q: want the account, no page, times in UTC", in, named)
		}
		g, err := ordersync.ParseOrderQuery(api.OrderQueryOf(back), now)
		if err != nil {
			t.Fatalf("%s named %q: %v", in, named, err)
		}
		g.Account = back.Get("account")
		f.Limit, f.Offset, f.Count = 0, 0, false
		if admin.FilterQuery(g) != named || !g.CreatedFrom.Equal(f.CreatedFrom) || !g.PaidFrom.Equal(f.PaidFrom) || !g.Since.Equal(f.Since) ||
			!g.CancelledFrom.Equal(f.CancelledFrom) || !g.FinalizedTo.Equal(f.FinalizedTo) || !g.ReversedFrom.Equal(f.ReversedFrom) || !g.ReversedTo.Equal(f.ReversedTo) ||
			g.Q != f.Q || g.Sort != f.Sort || !slices.Equal(g.Statuses, f.Statuses) || g.Currency != f.Currency {
			t.Errorf("%s named %q read back as %+v, want %+v", in, named, g, f)
		}
	}
	if got := admin.FilterQuery(ordersync.OrderFilter{Account: "a", Sort: ordersync.SortCreatedDesc}); got != "account=a" {
		t.Errorf("the default sort is named: %q", got)
	}
}
