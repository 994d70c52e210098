package admin_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ordersync/ordersync/sim"
)

// TestSearchAsACallerSaysIt: the API and the console find the paid order
// by what a buyer on the phone says (the email in capitals, the phone as
// written in four ways, the reference's beginning, the amount), and the
// console's empty result names the search and what search matches.
func TestSearchAsACallerSaysIt(t *testing.T) {
	t.Parallel()
	e, codes := newConsoleEnv(t)
	if sim.DefaultBuyer.Phone != "+50370000000" || sim.DefaultStore.CountryCode != "SV" {
		t.Fatalf("the simulator's buyer changed: %+v in %s", sim.DefaultBuyer, sim.DefaultStore.CountryCode)
	}
	paid := []string{codes[0]}
	searches := []struct {
		q    string
		want []string
	}{
		{strings.ToUpper(sim.DefaultBuyer.Email), paid},
		{"70000000", paid},
		{"7000-0000", paid},
		{"+503 7000 0000", paid},
		{"(503) 7000.0000", paid},
		{"a-1", paid},
		{"A-", []string{codes[1], codes[0]}},
		{"13.00", []string{codes[1], codes[0]}},
		{"13.01", nil},
	}
	b := newBrowser(t, e.url)
	b.signIn("ops-token")
	for _, s := range searches {
		var page struct {
			Orders []struct {
				Code string `json:"orderCode"`
			} `json:"orders"`
		}
		if st := apiDo(t, e.url, "GET", "/v1/orders?q="+url.QueryEscape(s.q), "ops-token", "", &page); st != http.StatusOK {
			t.Fatalf("API search %q: %d", s.q, st)
		}
		var got []string
		for _, o := range page.Orders {
			got = append(got, o.Code)
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("API search %q: %q, want %q", s.q, got, s.want)
		}
		_, html := b.do("GET", "/console/orders?q="+url.QueryEscape(s.q), nil)
		for _, c := range codes {
			if strings.Contains(html, c) != slices.Contains(s.want, c) {
				t.Errorf("console search %q: shows %s %v, want %v", s.q, c, strings.Contains(html, c), slices.Contains(s.want, c))
			}
		}
	}

	_, html := b.do("GET", "/console/orders?q="+url.QueryEscape("7000-9999"), nil)
	for _, want := range []string{"No order matches the search <strong>7000-9999</strong>.", "with or without the country code", "12.50 finds totals of 12.50 in any currency",
		"its reference by its beginning", "in any case"} {
		if !strings.Contains(html, want) {
			t.Errorf("empty search lacks %q:\n%s", want, html)
		}
	}
	_, html = b.do("GET", "/console/orders?q=nobody&status=PAID", nil)
	if !strings.Contains(html, "No order matches the search <strong>nobody</strong> with the filters above.") {
		t.Errorf("empty search with a filter does not say so:\n%s", html)
	}
	_, html = b.do("GET", "/console/orders?status=CANCELLED", nil)
	if !strings.Contains(html, "No order matches the filters above.") || strings.Contains(html, "Search finds") {
		t.Errorf("empty filter without a search:\n%s", html)
	}
}
