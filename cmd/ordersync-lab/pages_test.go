package main

import (
	"slices"
	"testing"
)

// TestPagesLinks: a page's links to the Orders page are found unescaped
// and grouped by the range they filter on, each once.
func TestPagesLinks(t *testing.T) {
	page := `<a href="/console/orders?account=madrid&amp;paidFrom=2026-11-26&amp;paidTo=2026-11-27&amp;status=collected">3</a>
<a href="/console/orders?account=madrid&amp;reversedFrom=2026-11-26&amp;reversedTo=2026-11-27">1</a>
<a href="/console/orders?account=madrid&amp;paidFrom=2026-11-26&amp;paidTo=2026-11-27&amp;status=collected">3</a>
<a href="/console/orders?account=madrid&amp;status=PENDING">9</a> <a href="/console/totals">totals</a>`
	got := links(page)
	want := map[string][]string{
		"paid":     {"/console/orders?account=madrid&paidFrom=2026-11-26&paidTo=2026-11-27&status=collected"},
		"reversed": {"/console/orders?account=madrid&reversedFrom=2026-11-26&reversedTo=2026-11-27"},
		"":         {"/console/orders?account=madrid&status=PENDING"},
	}
	if len(got) != len(want) {
		t.Fatalf("links: %q, want %q", got, want)
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("links %q: %q, want %q", k, got[k], w)
		}
	}
}
