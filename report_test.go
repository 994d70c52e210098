package ordersync

import (
	"testing"
	"time"
)

func TestReportDays(t *testing.T) {
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	date := func(s string) time.Time {
		d, err := ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		zone     string
		from, to string
		// starts are the days' starts in UTC; hours, their lengths.
		starts []string
		hours  []float64
	}{
		// Spring forward on 2026-03-08 at 02:00 EST.
		{"America/New_York", "2026-03-07", "2026-03-10",
			[]string{"2026-03-07T05:00:00Z", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"}, []float64{24, 23, 24}},
		// Fall back on 2026-11-01 at 02:00 EDT.
		{"America/New_York", "2026-10-31", "2026-11-02",
			[]string{"2026-10-31T04:00:00Z", "2026-11-01T04:00:00Z"}, []float64{24, 25}},
		// Spring forward on 2026-03-29 at 02:00 CET; fall back on 2026-10-25.
		{"Europe/Madrid", "2026-03-28", "2026-03-31",
			[]string{"2026-03-27T23:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}, []float64{24, 23, 24}},
		{"Europe/Madrid", "2026-10-25", "2026-10-26",
			[]string{"2026-10-24T22:00:00Z"}, []float64{25}},
		{"UTC", "2026-02-28", "2026-03-01", []string{"2026-02-28T00:00:00Z"}, []float64{24}},
	} {
		days := ReportDays(date(tc.from), date(tc.to), zone(tc.zone))
		if len(days) != len(tc.starts) {
			t.Fatalf("%s %s..%s: %d days, want %d", tc.zone, tc.from, tc.to, len(days), len(tc.starts))
		}
		for i, d := range days {
			if got := d.Start.UTC().Format(time.RFC3339); got != tc.starts[i] {
				t.Errorf("%s %s starts at %s, want %s", tc.zone, d.Date, got, tc.starts[i])
			}
			if got := d.End.Sub(d.Start).Hours(); got != tc.hours[i] {
				t.Errorf("%s %s lasts %v hours, want %v", tc.zone, d.Date, got, tc.hours[i])
			}
			if i > 0 && !days[i-1].End.Equal(d.Start) {
				t.Errorf("%s: a gap or overlap between %s and %s", tc.zone, days[i-1].Date, d.Date)
			}
		}
	}
}

func TestDailyTotalsParamsValidate(t *testing.T) {
	d := func(s string) time.Time { v, _ := ParseDate(s); return v }
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"2026-03-01", "2026-03-02", true},
		{"2026-03-01", "2026-03-01", false},
		{"2026-03-02", "2026-03-01", false},
		{"2026-01-01", "2027-01-02", true}, // 366 days
		{"2026-01-01", "2027-01-03", false},
	} {
		err := DailyTotalsParams{From: d(tc.from), To: d(tc.to)}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s..%s: Validate() = %v, want ok %v", tc.from, tc.to, err, tc.ok)
		}
	}
	for _, bad := range []string{"2026-3-1", "2026-02-30", "yesterday", ""} {
		if _, err := ParseDate(bad); err == nil {
			t.Errorf("ParseDate(%q) accepted it", bad)
		}
	}
}

func TestTallyDays(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	from, _ := ParseDate("2026-03-07")
	to, _ := ParseDate("2026-03-10")
	days := ReportDays(from, to, ny)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var entries []ReportEntry
	// Ten payments of 0.10 on the 23-hour day, the last a second before
	// its end (04:00Z), plus one just after it on the next day.
	for i := range 10 {
		entries = append(entries, ReportEntry{Kind: ReportPaid, At: at("2026-03-08T05:00:00Z").Add(time.Duration(i) * time.Hour), Currency: "USD", Total: MustAmount("0.10")})
	}
	entries = append(entries,
		ReportEntry{Kind: ReportPaid, At: at("2026-03-09T03:59:59Z"), Currency: "USD", Total: MustAmount("0.10")},
		ReportEntry{Kind: ReportReversed, At: at("2026-03-09T04:00:00Z"), Currency: "USD", Total: MustAmount("0.10")},
		ReportEntry{Kind: ReportCreated, At: at("2026-03-09T04:00:00Z"), Currency: "KWD", Total: MustAmount("1.250")},
		ReportEntry{Kind: ReportCreated, At: at("2026-03-09T05:00:00Z"), Currency: "KWD", Total: MustAmount("2.5")},
		// Outside the range: before and at its end.
		ReportEntry{Kind: ReportPaid, At: at("2026-03-07T04:59:59Z"), Currency: "USD", Total: MustAmount("9")},
		ReportEntry{Kind: ReportPaid, At: at("2026-03-10T04:00:00Z"), Currency: "USD", Total: MustAmount("9")},
	)
	got := TallyDays(days, entries)
	want := []DayTotals{
		{Date: "2026-03-08", Currency: "USD", Paid: Tally{11, "1.10"}, Net: "1.10",
			Created: Tally{0, "0.00"}, Cancelled: Tally{0, "0.00"}, Finalized: Tally{0, "0.00"}, Reversed: Tally{0, "0.00"}, Collected: Tally{0, "0.00"}},
		{Date: "2026-03-09", Currency: "KWD", Created: Tally{2, "3.750"}, Net: "0.000",
			Paid: Tally{0, "0.000"}, Cancelled: Tally{0, "0.000"}, Finalized: Tally{0, "0.000"}, Reversed: Tally{0, "0.000"}, Collected: Tally{0, "0.000"}},
		{Date: "2026-03-09", Currency: "USD", Reversed: Tally{1, "0.10"}, Net: "-0.10",
			Created: Tally{0, "0.00"}, Paid: Tally{0, "0.00"}, Cancelled: Tally{0, "0.00"}, Finalized: Tally{0, "0.00"}, Collected: Tally{0, "0.00"}},
	}
	if len(got) != len(want) {
		t.Fatalf("TallyDays = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("day %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Ten of 0.10 are 1.00, exactly.
	var ten []ReportEntry
	for range 10 {
		ten = append(ten, ReportEntry{Kind: ReportPaid, At: days[0].Start, Currency: "USD", Total: MustAmount("0.10")})
	}
	if got := TallyDays(days, ten); len(got) != 1 || got[0].Paid.Total != "1.00" {
		t.Errorf("ten of 0.10 = %+v, want 1.00", got)
	}
}
