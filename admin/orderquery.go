package admin

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// OrderQueryParams are the query parameters ParseOrderQuery reads, in the
// API's spelling; the CLI's flags are the same names in kebab case.
var OrderQueryParams = []string{"q", "status", "since", "createdFrom", "createdTo", "paidFrom", "paidTo",
	"cancelledFrom", "cancelledTo", "finalizedFrom", "finalizedTo", "reversedFrom", "reversedTo", "tz",
	"currency", "minTotal", "maxTotal", "sort", "cursor", "limit", "offset", "count"}

// QueryError is input ParseOrderQuery refused: for each parameter, what is
// wrong with it and what is accepted.
type QueryError struct {
	Fields map[string][]string
}

func (e *QueryError) Error() string {
	var parts []string
	for _, p := range OrderQueryParams {
		for _, m := range e.Fields[p] {
			parts = append(parts, p+": "+m)
		}
	}
	return strings.Join(parts, "; ")
}

// ParseOrderQuery reads an order filter from query parameters (the
// listing's, an export's, the CLI's flags): the one parser of them all, so
// that every way in selects the same orders. The account is the caller's to
// set. now is when a since given as a duration counts back from.
func ParseOrderQuery(q url.Values, now time.Time) (ordersync.OrderFilter, error) {
	var (
		f    ordersync.OrderFilter
		errs = map[string][]string{}
		err  error
	)
	fail := func(param, msg string) { errs[param] = append(errs[param], msg) }

	f.Q = strings.TrimSpace(q.Get("q"))
	if f.Statuses, err = ParseStatuses(q["status"]); err != nil {
		fail("status", err.Error())
	}
	loc := time.UTC
	if tz := q.Get("tz"); tz != "" {
		if loc, err = ordersync.ParseZone(tz); err != nil {
			loc = time.UTC
			fail("tz", err.Error())
		}
	}
	bound := func(param string, dst *time.Time) {
		if v := q.Get(param); v != "" {
			if *dst, err = ParseTimeBound(v, loc); err != nil {
				fail(param, err.Error())
			}
		}
	}
	bound("createdFrom", &f.CreatedFrom)
	bound("createdTo", &f.CreatedTo)
	bound("paidFrom", &f.PaidFrom)
	bound("paidTo", &f.PaidTo)
	bound("cancelledFrom", &f.CancelledFrom)
	bound("cancelledTo", &f.CancelledTo)
	bound("finalizedFrom", &f.FinalizedFrom)
	bound("finalizedTo", &f.FinalizedTo)
	bound("reversedFrom", &f.ReversedFrom)
	bound("reversedTo", &f.ReversedTo)
	for _, r := range []struct {
		from, to string
		f, t     time.Time
	}{{"createdFrom", "createdTo", f.CreatedFrom, f.CreatedTo}, {"paidFrom", "paidTo", f.PaidFrom, f.PaidTo},
		{"cancelledFrom", "cancelledTo", f.CancelledFrom, f.CancelledTo}, {"finalizedFrom", "finalizedTo", f.FinalizedFrom, f.FinalizedTo},
		{"reversedFrom", "reversedTo", f.ReversedFrom, f.ReversedTo}} {
		if !r.f.IsZero() && !r.t.IsZero() && r.t.Before(r.f) {
			fail(r.to, fmt.Sprintf("is before %s: a range is [%s, %s), with %s at or after %s", r.from, r.from, r.to, r.to, r.from))
		}
	}
	if v := q.Get("since"); v != "" {
		if q.Get("createdFrom") != "" {
			fail("since", "cannot be given with createdFrom, which it predates: use createdFrom alone")
		} else if f.Since, err = ParseSince(v, now); err != nil {
			fail("since", err.Error())
		}
	}
	if v := q.Get("currency"); v != "" {
		if len(v) != 3 || strings.Trim(strings.ToUpper(v), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			fail("currency", fmt.Sprintf("%q is not a currency code: want three letters such as USD", v))
		} else {
			f.Currency = strings.ToUpper(v)
		}
	}
	amount := func(param string) *ordersync.Amount {
		v := q.Get(param)
		if v == "" {
			return nil
		}
		a, err := ordersync.ParseAmount(v)
		if err != nil {
			fail(param, fmt.Sprintf("%q is not an amount: want a plain decimal such as 10 or 25.50", v))
			return nil
		}
		return &a
	}
	f.MinTotal, f.MaxTotal = amount("minTotal"), amount("maxTotal")
	if f.MinTotal != nil && f.MaxTotal != nil && f.MaxTotal.Cmp(*f.MinTotal) < 0 {
		fail("maxTotal", "is below minTotal: want maxTotal at or above minTotal")
	}
	if f.Sort, err = ordersync.ParseOrderSort(q.Get("sort")); err != nil {
		fail("sort", err.Error())
	}
	if v := q.Get("cursor"); v != "" && f.Sort != "" {
		if f.After, err = ordersync.ParseOrderCursor(v, f.Sort); err != nil {
			fail("cursor", err.Error())
		}
	}
	count := func(param string, dst *int) {
		if v := q.Get(param); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				fail(param, "must be a whole number ≥ 0")
			}
			*dst = n
		}
	}
	count("limit", &f.Limit)
	count("offset", &f.Offset)
	switch q.Get("count") {
	case "", "none":
	case "exact":
		f.Count = true
	default:
		fail("count", fmt.Sprintf("%q: want exact (count every order the filter selects) or none", q.Get("count")))
	}
	if len(errs) > 0 {
		return ordersync.OrderFilter{}, &QueryError{Fields: errs}
	}
	return f, nil
}

// ParseTimeBound reads a bound of a time range: an RFC 3339 time, or a
// date (YYYY-MM-DD) meaning its midnight in loc.
func ParseTimeBound(v string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, loc); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-03-08T00:00:00-05:00) nor a date (YYYY-MM-DD, read in tz)", v)
}

// FilterQuery is the query string that selects what f selects, its page
// aside (cursor, limit, offset, count): the account, then each filter
// ParseOrderQuery reads, times in UTC (a since given as a duration becomes
// the time it meant), keys sorted. The audit trail names the orders an
// export read by it, and ParseOrderQuery reads it back to the same filter.
func FilterQuery(f ordersync.OrderFilter) string {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	at := func(k string, t time.Time) {
		if !t.IsZero() {
			q.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	amount := func(k string, a *ordersync.Amount) {
		if a != nil {
			q.Set(k, a.String())
		}
	}
	set("account", f.Account)
	set("q", f.Q)
	for _, st := range f.Statuses {
		q.Add("status", string(st))
	}
	at("since", f.Since)
	at("createdFrom", f.CreatedFrom)
	at("createdTo", f.CreatedTo)
	at("paidFrom", f.PaidFrom)
	at("paidTo", f.PaidTo)
	at("cancelledFrom", f.CancelledFrom)
	at("cancelledTo", f.CancelledTo)
	at("finalizedFrom", f.FinalizedFrom)
	at("finalizedTo", f.FinalizedTo)
	at("reversedFrom", f.ReversedFrom)
	at("reversedTo", f.ReversedTo)
	set("currency", f.Currency)
	amount("minTotal", f.MinTotal)
	amount("maxTotal", f.MaxTotal)
	if f.Sort != ordersync.SortCreatedDesc {
		set("sort", string(f.Sort))
	}
	return q.Encode()
}
