package admin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleListsInBrowser: on the office data set, a bookmarked Orders
// view opened signed out comes back, query and all, after signing in; its
// pages go forwards and back with the same orders on each, and the two
// pages hold the ten orders the reference prefix finds.
func TestConsoleListsInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	e, _ := officeEnv(t)
	var codes []string
	for i := range 10 {
		codes = append(codes, fmt.Sprintf("SV%04d", i))
	}

	const bookmark = "/console/orders?sort=total_asc&limit=5&q=r-sv-000"
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
	if q != "r-sv-000" || sort != "total_asc" || !strings.Contains(h.text("#sort option:checked"), "Smallest total first") {
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
		if strings.Contains(first, c) == strings.Contains(second, c) {
			t.Errorf("%s is not on exactly one page", c)
		}
	}
	if !h.absent("#nextpage") {
		// The second page is the last: the prefix finds ten orders.
		h.load("next page", chromedp.Click(chromedp.CSS("#nextpage")))
		if !h.absent("#nextpage") {
			t.Errorf("a third page after %q", second)
		}
	}
}

// clippedCells is the cells of the page's tables whose element box ends
// past the viewport or past the box of the table's scroll container
// (which hides what overflows it), as "page: column header: cell text".
const clippedCells = `(() => {
	const out = [];
	const vw = document.documentElement.clientWidth;
	for (const table of document.querySelectorAll("table")) {
		const box = table.closest(".scroll") || document.body;
		const right = Math.min(vw, box.getBoundingClientRect().right);
		const heads = [...table.querySelectorAll("thead th")].map(th => th.innerText.trim());
		for (const row of table.querySelectorAll("tr")) {
			[...row.children].forEach((cell, i) => {
				const r = cell.getBoundingClientRect();
				if (r.width > 0 && r.right > right + 0.5) {
					out.push((heads[i] || "?") + ": " + cell.innerText.trim().slice(0, 40) + " (" + Math.round(r.right) + " > " + Math.round(right) + ")");
				}
			});
		}
	}
	return out;
})()`

// TestConsoleColumnsFitInBrowser: at 1366 × 900, a common laptop, on pages
// filled from the office data set, no column of the Orders, Dead letters,
// Daily totals, Audit and failed deliveries pages is cut off:
// every cell's box ends within the viewport and its table's container;
// at a phone's 390 px, every cell ends within the viewport too.
func TestConsoleColumnsFitInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	e, _ := officeEnv(t)
	h.signIn(e.url, "ops-token")
	failed := "/console/endpoints/" + e.endpoint.ID + "/failed"
	for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
		h.do("set the viewport", chromedp.EmulateViewport(size.w, size.h))
		for _, path := range []string{"/console/orders?account=*", "/console/orders", "/console/dead-letters", "/console/totals",
			"/console/audit", "/console/endpoints", failed, "/console/orders/" + officeCall.Code} {
			h.load("open "+path, chromedp.Navigate(e.url+path))
			if path != "/console/endpoints" && !strings.HasPrefix(path, "/console/orders/") && h.absent("table tbody tr td") {
				t.Fatalf("%s has no rows to measure", path)
			}
			// Nothing on the page runs past its width (the endpoints'
			// figures are no table).
			wide, err := chromedp.Run(h.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
			if err != nil || wide {
				t.Errorf("at %d px, %s is wider than the screen (%v)", size.w, path, err)
			}
			cut, err := chromedp.Run(h.ctx, chromedp.Evaluate[[]string](clippedCells))
			if err != nil {
				t.Fatal(err)
			}
			if len(cut) > 0 {
				t.Errorf("at %d px, %s cuts off %d cells: %q", size.w, path, len(cut), cut)
			}
			name := strings.NewReplacer("/console/", "", "?account=*", "-all", "/", "-").Replace(path)
			if path == failed {
				name = "failed-deliveries"
			}
			h.shot(fmt.Sprintf("fit-%d-%s", size.w, name))
		}
	}
}
