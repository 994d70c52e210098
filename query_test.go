package ordersync

import (
	"errors"
	"fmt"
	"slices"
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

func TestParseTimeBound(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	for _, tc := range []struct {
		in   string
		loc  *time.Location
		want time.Time
	}{
		{"2026-03-08", ny, time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)},
		{"2026-03-09", ny, time.Date(2026, 3, 9, 4, 0, 0, 0, time.UTC)}, // after the change to daylight saving
		{"2026-03-08", time.UTC, time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)},
		{"2026-03-08T10:00:00+01:00", ny, time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC)},
	} {
		got, err := ParseTimeBound(tc.in, tc.loc)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTimeBound(%s, %s) = %s, %v; want %s", tc.in, tc.loc, got, err, tc.want)
		}
	}
}

// TestParseStatuses: several statuses, from one value or several, in any
// case, and the group collected for PAID and FINALIZED.
func TestParseStatuses(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"paid"}, "[PAID]"},
		{[]string{"PAID", "FINALIZED"}, "[PAID FINALIZED]"},
		{[]string{"PAID,finalized"}, "[PAID FINALIZED]"},
		{[]string{"collected"}, "[PAID FINALIZED]"},
		{[]string{"Collected,PAID", "CANCELLED"}, "[PAID FINALIZED CANCELLED]"},
	} {
		got, err := ParseStatuses(tc.in)
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("ParseStatuses(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseStatuses([]string{"paidish"}); err == nil || !strings.Contains(err.Error(), "collected") {
		t.Errorf("an unknown status: %v; want the group named too", err)
	}
	// Reversed since: the store's test of the group on both dialects is
	// TestCollectedGroup.
}

// TestParseOrderQuery reads every parameter, and refuses bad input with a
// QueryError naming each parameter at fault and what it accepts.
func TestParseOrderQuery(t *testing.T) {
	now := time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC)
	f, err := ParseOrderQuery(OrderQuery{Q: " Peña ", Statuses: []string{"paid,finalized"}, CreatedFrom: "2026-03-08", CreatedTo: "2026-03-09",
		TZ: "America/New_York", Currency: "eur", MinTotal: "10.50", MaxTotal: "99", Sort: "total_asc", Limit: "5", Offset: "2", Count: "exact"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Q != "Peña" || !slices.Equal(f.Statuses, []Status{StatusPaid, StatusFinalized}) || f.Currency != "EUR" ||
		!f.CreatedFrom.Equal(time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)) || f.MinTotal.String() != "10.50" || f.MaxTotal.String() != "99" ||
		f.Sort != SortTotalAsc || f.Limit != 5 || f.Offset != 2 || !f.Count {
		t.Errorf("filter %+v", f)
	}
	if f, err := ParseOrderQuery(OrderQuery{Since: "24h"}, now); err != nil || !f.Since.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("since=24h: %v, %v", f.Since, err)
	}
	for _, tc := range []struct {
		q           OrderQuery
		param, says string
	}{
		{OrderQuery{Statuses: []string{"paidish"}}, "status", "collected"},
		{OrderQuery{TZ: "Mars/Olympus_Mons"}, "tz", "Mars/Olympus_Mons"},
		{OrderQuery{CreatedFrom: "2026-02-01", CreatedTo: "2026-01-01"}, "createdTo", "is before createdFrom"},
		{OrderQuery{PaidFrom: "last week"}, "paidFrom", "neither an RFC 3339 time"},
		{OrderQuery{Since: "24h", CreatedFrom: "2026-01-01"}, "since", "cannot be given with createdFrom"},
		{OrderQuery{Since: "yesterday"}, "since", "nor a duration"},
		{OrderQuery{Currency: "dollars"}, "currency", "three letters"},
		{OrderQuery{MinTotal: "ten"}, "minTotal", "not an amount"},
		{OrderQuery{MinTotal: "10", MaxTotal: "5"}, "maxTotal", "below minTotal"},
		{OrderQuery{Sort: "price"}, "sort", "price"},
		{OrderQuery{Cursor: "not-a-cursor"}, "cursor", "malformed cursor"},
		{OrderQuery{Limit: "-1"}, "limit", "whole number"},
		{OrderQuery{Offset: "x"}, "offset", "whole number"},
		{OrderQuery{Count: "maybe"}, "count", "want exact"},
	} {
		_, err := ParseOrderQuery(tc.q, now)
		var qe *QueryError
		if !errors.As(err, &qe) || len(qe.Fields) != 1 || len(qe.Fields[tc.param]) != 1 || !strings.Contains(qe.Fields[tc.param][0], tc.says) ||
			!strings.HasPrefix(err.Error(), tc.param+": ") {
			t.Errorf("%+v: %v, want a QueryError naming %s only, saying %q", tc.q, err, tc.param, tc.says)
		}
	}
	// Every fault is named at once, in the order of OrderQueryParams.
	_, err = ParseOrderQuery(OrderQuery{Count: "maybe", Currency: "x", Statuses: []string{"no"}}, now)
	if err == nil || !strings.HasPrefix(err.Error(), "status: ") || !strings.Contains(err.Error(), "; currency: ") || !strings.Contains(err.Error(), "; count: ") {
		t.Errorf("three faults: %v", err)
	}
}

// TestOrderQueryParam: each parameter but status has its field, and no
// other name has one.
func TestOrderQueryParam(t *testing.T) {
	var q OrderQuery
	seen := map[*string]bool{}
	for _, p := range OrderQueryParams {
		f := q.Param(p)
		if (f == nil) != (p == "status") || (f != nil && seen[f]) {
			t.Errorf("Param(%q) = %p", p, f)
		}
		seen[f] = true
	}
	if q.Param("account") != nil {
		t.Error("Param(account) is a field")
	}
}
