package ordersync

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxReportDays is the longest range of days one daily report covers.
const MaxReportDays = 366

// DateLayout is how a calendar day is written: 2026-03-08.
const DateLayout = "2006-01-02"

// ParseDate reads a calendar day, YYYY-MM-DD. The day is returned as its
// midnight in UTC: a date, not an instant, until a zone places it.
func ParseDate(s string) (time.Time, error) {
	d, err := time.Parse(DateLayout, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date: want YYYY-MM-DD", s)
	}
	return d, nil
}

// DailyTotalsParams selects a daily report: the account's days from From
// up to To (excluded), calendar days in Location. A nil Location is the
// store's time zone of the account's orders, else UTC.
type DailyTotalsParams struct {
	Account  string
	From, To time.Time // dates, as ParseDate returns them
	Location *time.Location
}

// Validate says which field is wrong, keyed by the API's parameter names.
func (p DailyTotalsParams) Validate() error {
	fields := map[string][]string{}
	switch days := ReportDayCount(p.From, p.To); {
	case !p.To.After(p.From):
		fields["to"] = []string{"must be after from (to is excluded)"}
	case days > MaxReportDays:
		fields["to"] = []string{fmt.Sprintf("the range covers %d days; at most %d", days, MaxReportDays)}
	}
	if len(fields) > 0 {
		return &ValidationError{Title: "invalid report range", Fields: fields}
	}
	return nil
}

// ReportDayCount is how many days [from, to) covers.
func ReportDayCount(from, to time.Time) int {
	return int(to.Sub(from) / (24 * time.Hour))
}

// DaySpan is one calendar day of a zone as instants: [Start, End). A day
// with a daylight-saving change lasts 23 or 25 hours.
type DaySpan struct {
	Date       string
	Start, End time.Time
}

// ReportDays are the calendar days [from, to) in loc. A midnight the zone
// skips (a change at 00:00) starts its day at the first instant that
// exists, as time.Date normalizes it.
func ReportDays(from, to time.Time, loc *time.Location) []DaySpan {
	var days []DaySpan
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		next := d.AddDate(0, 0, 1)
		days = append(days, DaySpan{
			Date:  d.Format(DateLayout),
			Start: time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc),
			End:   time.Date(next.Year(), next.Month(), next.Day(), 0, 0, 0, 0, loc),
		})
	}
	return days
}

// ReportKind is what a report entry counts.
type ReportKind int

// The figures of a day. Cancelled counts orders never paid; Reversed,
// orders paid and later cancelled, on the day of the cancellation;
// Collected, the orders paid on the day and still Collected (the console's
// Overview).
const (
	ReportCreated ReportKind = iota
	ReportPaid
	ReportCancelled
	ReportFinalized
	ReportReversed
	ReportCollected
)

// ReportEntry is one order counted in one figure of a report, at the
// instant that places it in a day, or Count orders whose totals sum to
// Total, all in the same day (a database's sum of a day). A zero Count is
// one order.
type ReportEntry struct {
	Kind     ReportKind
	At       time.Time
	Currency string
	Total    Amount
	Count    int
}

// Tally is a count of orders and the exact sum of their totals, written
// with the currency's minor units when the sum has no more digits.
type Tally struct {
	Count int    `json:"count"`
	Total string `json:"total"`
}

// DayTotals are one day's figures in one currency. Net is paid less
// reversed: what ordersync saw collected, not the provider's payout.
type DayTotals struct {
	Date string `json:"date"`
	// Account is the store the figures are of, in a report of several
	// stores (MergeStoreTotals); "" in a report of one.
	Account   string `json:"account,omitempty"`
	Currency  string `json:"currency"`
	Created   Tally  `json:"created"`
	Paid      Tally  `json:"paid"`
	Cancelled Tally  `json:"cancelled"`
	Finalized Tally  `json:"finalized"`
	Reversed  Tally  `json:"reversed"`
	Net       string `json:"net"`
	// Collected is the paid orders of the day not reversed since (the
	// Overview's figure); not part of the API's report.
	Collected Tally `json:"-"`
}

// DailyTotals is a daily report: the zone its days are in and one entry
// per day and currency that has anything, by date, then currency.
type DailyTotals struct {
	TZ   string      `json:"tz"`
	Days []DayTotals `json:"days"`
	// AsOf is the instant the figures are current at: the back office's
	// indexer has counted every change written before it. Behind says that
	// changes after it wait to be counted, so the figures are not current.
	AsOf   time.Time `json:"asOf,omitzero"`
	Behind bool      `json:"behind,omitempty"`
}

// MergeStoreTotals is the report of several stores over the same days of
// the same zone: each store's entries, marked with the store, by date,
// then store, then currency. Figures of different stores stay apart, as
// those of different currencies do.
func MergeStoreTotals(tz string, byStore map[string]DailyTotals) DailyTotals {
	out := DailyTotals{TZ: tz, Days: []DayTotals{}}
	for store, t := range byStore {
		if out.AsOf.IsZero() || t.AsOf.Before(out.AsOf) {
			out.AsOf = t.AsOf
		}
		out.Behind = out.Behind || t.Behind
		for _, d := range t.Days {
			d.Account = store
			out.Days = append(out.Days, d)
		}
	}
	slices.SortFunc(out.Days, func(a, b DayTotals) int {
		return cmp.Or(strings.Compare(a.Date, b.Date), strings.Compare(a.Account, b.Account), strings.Compare(a.Currency, b.Currency))
	})
	return out
}

// TallyDays sums entries into the days they fall in; entries outside every
// day are left out, and so are days and currencies with no entry.
func TallyDays(days []DaySpan, entries []ReportEntry) []DayTotals {
	type key struct {
		day      int
		currency string
	}
	type sums struct {
		count [ReportCollected + 1]int
		total [ReportCollected + 1]Amount
	}
	acc := map[key]*sums{}
	for _, e := range entries {
		i, found := slices.BinarySearchFunc(days, e.At, func(d DaySpan, at time.Time) int {
			switch {
			case !at.Before(d.End):
				return -1
			case at.Before(d.Start):
				return 1
			}
			return 0
		})
		if !found {
			continue
		}
		k := key{i, e.Currency}
		s := acc[k]
		if s == nil {
			s = &sums{}
			for j := range s.total {
				s.total[j] = AmountFromInt(0)
			}
			acc[k] = s
		}
		s.count[e.Kind] += max(e.Count, 1)
		s.total[e.Kind] = s.total[e.Kind].Add(e.Total)
	}
	keys := make([]key, 0, len(acc))
	for k := range acc {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.day != b.day {
			return a.day - b.day
		}
		return strings.Compare(a.currency, b.currency)
	})
	out := make([]DayTotals, 0, len(keys))
	for _, k := range keys {
		s := acc[k]
		tally := func(kind ReportKind) Tally {
			return Tally{Count: s.count[kind], Total: inMinorUnits(s.total[kind], k.currency).String()}
		}
		out = append(out, DayTotals{
			Date: days[k.day].Date, Currency: k.currency,
			Created: tally(ReportCreated), Paid: tally(ReportPaid), Cancelled: tally(ReportCancelled),
			Finalized: tally(ReportFinalized), Reversed: tally(ReportReversed), Collected: tally(ReportCollected),
			Net: inMinorUnits(s.total[ReportPaid].Sub(s.total[ReportReversed]), k.currency).String(),
		})
	}
	return out
}

// FormatMinorUnits writes an amount of currency as a report does: with the
// currency's decimal places when that loses no digit, else as it is.
func FormatMinorUnits(a Amount, currency string) string {
	return inMinorUnits(a, currency).String()
}

// inMinorUnits writes a with the currency's decimal places (0 as 0.00 in
// USD, 1.5 as 1.500 in KWD) when that loses no digit; otherwise, or for a
// currency not known, as it is: a report never rounds.
func inMinorUnits(a Amount, currency string) Amount {
	places, ok := MinorUnits(currency)
	if !ok || a.DecimalPlaces() > places {
		return a
	}
	var r Amount
	if _, err := moneyContext.Quantize(&r.d, &a.d, int32(-places)); err != nil {
		return a
	}
	return r
}

// Reports answers the back office's reports from the mirror.
type Reports interface {
	// DailyTotals sums the account's orders per calendar day and currency:
	// created, paid, cancelled unpaid, finalized, reversed and collected.
	DailyTotals(ctx context.Context, params DailyTotalsParams) (DailyTotals, error)
}
