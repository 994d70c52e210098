package admin_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleListsInBrowser: a bookmarked Orders view opened signed out
// comes back, query and all, after signing in; its pages go forwards and
// back with the same orders on each.
func TestConsoleListsInBrowser(t *testing.T) {
	h := newHeadless(t)
	e, codes := newConsoleEnv(t)

	const bookmark = "/console/orders?sort=total_asc&limit=1&q=A-"
	h.load("open the bookmark signed out", chromedp.Navigate(e.url+bookmark))
	if got := h.text("h1"); got != "Sign in" {
		t.Fatalf("the bookmark signed out shows %q, want the sign-in page", got)
	}
	h.do("type the token", chromedp.SendKeys(chromedp.CSS("#token"), "eve-token"))
	h.load("sign in", chromedp.Click(chromedp.CSS("main form button")))
	at, err := chromedp.Run(h.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if at != e.url+bookmark || h.text("h1") != "Orders" {
		t.Fatalf("after signing in the browser is at %s (%q), want the bookmark %s", at, h.text("h1"), bookmark)
	}
	q, err := chromedp.Run(h.ctx, chromedp.Evaluate[string](`document.querySelector("#q").value`))
	if err != nil {
		t.Fatal(err)
	}
	sort, _ := chromedp.Run(h.ctx, chromedp.Evaluate[string](`document.querySelector("#sort").value`))
	if q != "A-" || sort != "total_asc" || !strings.Contains(h.text("#sort option:checked"), "Smallest total first") {
		t.Errorf("the form shows q %q, sort %q", q, sort)
	}

	first := h.text("tbody")
	h.load("next page", chromedp.Click(chromedp.CSS("#nextpage")))
	second := h.text("tbody")
	h.load("previous page", chromedp.Click(chromedp.CSS("#prevpage")))
	if again := h.text("tbody"); again != first || second == first || !h.absent("#prevpage") {
		t.Errorf("pages: %q, then %q, back to %q", first, second, again)
	}
	for _, c := range codes {
		if !strings.Contains(first+second, c) {
			t.Errorf("%s on neither page", c)
		}
	}
}
