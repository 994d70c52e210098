package ordersync

import (
	"strings"
	"testing"
	"time"
)

func TestOrderCursorRoundTrip(t *testing.T) {
	at := time.Date(2026, 10, 10, 18, 0, 12, 345678000, time.UTC)
	total := MustAmount("17.990")
	for _, c := range []OrderCursor{
		{Sort: SortCreatedDesc, Time: &at, Row: 42},
		{Sort: SortPaidAsc, Row: 7}, // among the orders without a paid time
		{Sort: SortTotalAsc, Total: &total, Row: 9},
	} {
		got, err := ParseOrderCursor(c.String(), c.Sort)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got.Sort != c.Sort || got.Row != c.Row || (c.Time != nil && !got.Time.Equal(*c.Time)) || (c.Total != nil && got.Total.String() != "17.990") ||
			(c.Time == nil) != (got.Time == nil) || (c.Total == nil) != (got.Total == nil) {
			t.Errorf("round trip of %+v: %+v", c, got)
		}
	}
	good := OrderCursor{Sort: SortCreatedDesc, Time: &at, Row: 42}.String()
	for _, bad := range []string{"", "!!!", "e30", good[:len(good)-3], OrderCursor{Sort: "nope", Row: 1}.String(), OrderCursor{Sort: SortCreatedAsc}.String(),
		OrderCursor{Sort: SortTotalAsc, Time: &at, Row: 1}.String()} {
		if _, err := ParseOrderCursor(bad, ""); err == nil {
			t.Errorf("ParseOrderCursor(%q) accepted", bad)
		}
	}
	if _, err := ParseOrderCursor(good, SortTotalDesc); err == nil || !strings.Contains(err.Error(), "sort=created_desc") {
		t.Errorf("a cursor of another sort: %v", err)
	}
	if _, err := ParseOrderSort("price"); err == nil || !strings.Contains(err.Error(), "created_desc") {
		t.Errorf("ParseOrderSort(price) = %v, want the accepted sorts named", err)
	}
}
