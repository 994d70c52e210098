package main

import (
	"slices"
	"testing"
	"testing/synctest"
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

// TestReadOnceFree: a download refused for want of an export slot is
// asked for again until it is answered, and only that request is timed;
// a page (not a download) refused is not asked for again, and neither is
// a download past the waits. The pauses run on the bubble's clock.
func TestReadOnceFree(t *testing.T) { synctest.Test(t, testReadOnceFree) }

func testReadOnceFree(t *testing.T) {
	answers := func(statuses ...int) (func() (int, string, error), *int) {
		n := 0
		return func() (int, string, error) {
			s := statuses[min(n, len(statuses)-1)]
			n++
			return s, "", nil
		}, &n
	}
	read, n := answers(503, 503, 200)
	if status, _, _, err := readOnceFree(t.Context(), true, read); status != 200 || err != nil || *n != 3 {
		t.Errorf("a download refused twice: %d %v after %d requests; want 200 after 3", status, err, *n)
	}
	read, n = answers(503, 200)
	if status, _, _, err := readOnceFree(t.Context(), false, read); status != 503 || err != nil || *n != 1 {
		t.Errorf("a page refused: %d %v after %d requests; want 503 after 1", status, err, *n)
	}
	read, n = answers(503)
	if status, _, _, _ := readOnceFree(t.Context(), true, read); status != 503 || *n != downloadSlotWaits+1 {
		t.Errorf("a download always refused: %d after %d requests; want 503 after %d", status, *n, downloadSlotWaits+1)
	}
}
