package admin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// TestListOrdersQuery finds orders through the API by a buyer's name and
// walks a listing by cursor; bad input is a 400 naming the parameter.
func TestListOrdersQuery(t *testing.T) {
	t.Parallel()
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
