package api

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

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
		f, err := ordersync.ParseOrderQuery(OrderQueryOf(q), now)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		f.Account = "acme"
		named := FilterQuery(f)
		back, err := url.ParseQuery(named)
		if err != nil {
			t.Fatal(err)
		}
		if back.Get("account") != "acme" || back.Has("limit") || back.Has("tz") {
			t.Errorf("%s named %q: want the account, no page, times in UTC", in, named)
		}
		g, err := ordersync.ParseOrderQuery(OrderQueryOf(back), now)
		if err != nil {
			t.Fatalf("%s named %q: %v", in, named, err)
		}
		g.Account = back.Get("account")
		f.Limit, f.Offset, f.Count = 0, 0, false
		if FilterQuery(g) != named || !g.CreatedFrom.Equal(f.CreatedFrom) || !g.PaidFrom.Equal(f.PaidFrom) || !g.Since.Equal(f.Since) ||
			!g.CancelledFrom.Equal(f.CancelledFrom) || !g.FinalizedTo.Equal(f.FinalizedTo) || !g.ReversedFrom.Equal(f.ReversedFrom) || !g.ReversedTo.Equal(f.ReversedTo) ||
			g.Q != f.Q || g.Sort != f.Sort || !slices.Equal(g.Statuses, f.Statuses) || g.Currency != f.Currency {
			t.Errorf("%s named %q read back as %+v, want %+v", in, named, g, f)
		}
	}
	if got := FilterQuery(ordersync.OrderFilter{Account: "a", Sort: ordersync.SortCreatedDesc}); got != "account=a" {
		t.Errorf("the default sort is named: %q", got)
	}
}
