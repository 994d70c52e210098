package ordersync

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OrderFilter selects mirrored orders; zero fields select all. Ranges are
// [From, To): a zero bound is open. The back office's listing, exports and
// console all select orders with it.
type OrderFilter struct {
	Account string
	// Statuses, when any, select orders in one of them.
	Statuses []Status
	// Q finds orders by an identifier: the order code, order id or
	// authorization code exactly; the reference by its beginning (whole,
	// when the beginning is shared by more than a mirror's bound of
	// orders) and the buyer's email whole, regardless of case; the buyer's
	// phone however
	// it is written (PhoneSearchKeys: with or without the country code,
	// spaces, dashes, dots, parentheses); the total when Q is an amount
	// (12.50 finds totals of 12.50 in any currency, 12.5 and 12.500 alike);
	// or by the buyer's name: every word of Q begins a word of the name,
	// regardless of case and accents ("jose pe" finds "José Peña").
	Q string
	// Since selects orders created upstream at or after it; it predates
	// CreatedFrom, which means the same, and cannot be given with it.
	Since                  time.Time
	CreatedFrom, CreatedTo time.Time
	PaidFrom, PaidTo       time.Time
	// CancelledFrom/To, FinalizedFrom/To and ReversedFrom/To select the
	// orders the daily totals' cancelled, finalized and reversed figures
	// count in the range: never paid and first cancelled in it; first
	// finalized in it; paid and first cancelled after the payment in it.
	// A day of those figures links to exactly its orders with them.
	CancelledFrom, CancelledTo time.Time
	FinalizedFrom, FinalizedTo time.Time
	ReversedFrom, ReversedTo   time.Time
	Currency                   string
	MinTotal, MaxTotal         *Amount
	// Sort is the order of the listing; "" is SortCreatedDesc.
	Sort OrderSort
	// After continues a listing after the last order of a previous page
	// (its OrderPage.Next), in the same sort.
	After *OrderCursor
	Limit int
	// Offset skips that many orders (after After, when both are given).
	Offset int
	// Count asks for the exact number of orders the filter selects, which
	// costs a pass over all of them.
	Count bool
	// CountUpTo, when above 0, bounds that pass: the count stops past
	// CountUpTo orders, and Total is then CountUpTo+1, read as "more than
	// CountUpTo".
	CountUpTo int
	// Summary leaves out each order's line items and metadata, for a list
	// that shows neither: they are read from tables of their own, a page
	// of each per order where the mirror is not in memory.
	Summary bool
}

// OrderPage is one page of a listing: at most Limit orders (the filter's,
// after the mirror's default and cap), and Next, from which the following
// page continues, when there may be more. Total is how many orders the
// filter selects in all, when the filter asked for the count.
type OrderPage struct {
	Orders        []*MirroredOrder
	Next          *OrderCursor
	Total         *int
	Offset, Limit int
	// AsOf, for a search (Q) or a transition range (cancelled, finalized,
	// reversed from a time to another), is the instant its match by the
	// buyer's name or by the range is current at; Behind says that orders
	// changed since are not yet found so (the back office's indexer is
	// behind).
	AsOf   time.Time
	Behind bool
}

// FromIndexer reports whether f selects orders by the back office's read
// side, which the indexer keeps behind the mirror's writes: a search (Q),
// matched by the buyer's name's words, or a cancelled, finalized or
// reversed range, whose orders are found by their figure's quarter hour.
// A listing of such a filter says how current it is (OrderPage.AsOf).
func (f OrderFilter) FromIndexer() bool {
	for _, t := range []time.Time{f.CancelledFrom, f.CancelledTo, f.FinalizedFrom, f.FinalizedTo, f.ReversedFrom, f.ReversedTo} {
		if !t.IsZero() {
			return true
		}
	}
	return f.Q != ""
}

// OrderSort is the order of a listing. Every sort breaks ties by the order's
// row, so pages never overlap; orders without the sort's value (no paid time
// yet) come after all those with one, in either direction.
type OrderSort string

// The sorts of a listing.
const (
	SortCreatedDesc OrderSort = "created_desc"
	SortCreatedAsc  OrderSort = "created_asc"
	SortPaidDesc    OrderSort = "paid_desc"
	SortPaidAsc     OrderSort = "paid_asc"
	SortTotalDesc   OrderSort = "total_desc"
	SortTotalAsc    OrderSort = "total_asc"
)

// OrderSorts are the sorts a listing accepts, the default first.
var OrderSorts = []OrderSort{SortCreatedDesc, SortCreatedAsc, SortPaidDesc, SortPaidAsc, SortTotalDesc, SortTotalAsc}

// ParseOrderSort reads a sort by its name; "" is the default.
func ParseOrderSort(s string) (OrderSort, error) {
	if s == "" {
		return SortCreatedDesc, nil
	}
	for _, o := range OrderSorts {
		if string(o) == s {
			return o, nil
		}
	}
	names := make([]string, len(OrderSorts))
	for i, o := range OrderSorts {
		names[i] = string(o)
	}
	return "", fmt.Errorf("unknown sort %q (want one of %s)", s, strings.Join(names, ", "))
}

// Key is the sort's key: "created", "paid" or "total".
func (s OrderSort) Key() string {
	return strings.TrimSuffix(strings.TrimSuffix(string(s), "_desc"), "_asc")
}

// Desc reports whether the sort is descending.
func (s OrderSort) Desc() bool { return strings.HasSuffix(string(s), "_desc") }

// OrderCursor is where a listing stopped: the last order's sort value and
// row. Clients see it only encoded (String), as an opaque token.
type OrderCursor struct {
	Sort OrderSort
	// Time is the last order's created or paid time, Total its total; both
	// unset when it had no value for the sort (the listing had reached the
	// orders without one).
	Time  *time.Time
	Total *Amount
	// Row is the last order's row id, which breaks ties.
	Row int64
}

type cursorJSON struct {
	Sort  OrderSort  `json:"s"`
	Time  *time.Time `json:"t,omitempty"`
	Total *Amount    `json:"a,omitempty"`
	Row   int64      `json:"r"`
}

// String encodes the cursor as an opaque token safe in a URL.
func (c OrderCursor) String() string {
	b, _ := json.Marshal(cursorJSON(c))
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseOrderCursor decodes a token made by OrderCursor.String, checking
// that it continues a listing in sort.
func ParseOrderCursor(token string, sort OrderSort) (*OrderCursor, error) {
	const malformed = "malformed cursor: pass the nextCursor of a previous page unchanged"
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, fmt.Errorf(malformed)
	}
	var c cursorJSON
	if err := json.Unmarshal(b, &c); err != nil || c.Row < 1 {
		return nil, fmt.Errorf(malformed)
	}
	if _, err := ParseOrderSort(string(c.Sort)); err != nil || c.Sort == "" {
		return nil, fmt.Errorf(malformed)
	}
	if sort == "" {
		sort = SortCreatedDesc
	}
	if c.Sort != sort {
		return nil, fmt.Errorf("the cursor continues a listing with sort=%s, not sort=%s", c.Sort, sort)
	}
	if (c.Time != nil && c.Sort.Key() == "total") || (c.Total != nil && c.Sort.Key() != "total") {
		return nil, fmt.Errorf(malformed)
	}
	oc := OrderCursor(c)
	return &oc, nil
}

// OrderQuery is an order filter as a caller writes it, each field the text
// given ("" when not): the admin API's query parameters, the console's
// forms and the CLI's flags all fill one, so that ParseOrderQuery, their one
// parser, selects the same orders whichever way in.
type OrderQuery struct {
	Q        string
	Statuses []string
	Since    string
	// The ranges' bounds: an RFC 3339 time, or a date meaning its
	// midnight in TZ (ParseTimeBound).
	CreatedFrom, CreatedTo     string
	PaidFrom, PaidTo           string
	CancelledFrom, CancelledTo string
	FinalizedFrom, FinalizedTo string
	ReversedFrom, ReversedTo   string
	TZ                         string
	Currency                   string
	MinTotal, MaxTotal         string
	Sort, Cursor               string
	Limit, Offset              string
	// Count is "exact" (count every order the filter selects) or "none".
	Count string
}

// OrderQueryParams name OrderQuery's fields as the admin API's query
// parameters, in the order a QueryError lists them; the CLI's flags are the
// same names in kebab case. "status" is Statuses, which may be repeated.
var OrderQueryParams = []string{"q", "status", "since", "createdFrom", "createdTo", "paidFrom", "paidTo",
	"cancelledFrom", "cancelledTo", "finalizedFrom", "finalizedTo", "reversedFrom", "reversedTo", "tz",
	"currency", "minTotal", "maxTotal", "sort", "cursor", "limit", "offset", "count"}

// Param is the field of the single-valued parameter name (one of
// OrderQueryParams but "status"), nil for any other name.
func (q *OrderQuery) Param(name string) *string {
	fields := map[string]*string{"q": &q.Q, "since": &q.Since, "createdFrom": &q.CreatedFrom, "createdTo": &q.CreatedTo,
		"paidFrom": &q.PaidFrom, "paidTo": &q.PaidTo, "cancelledFrom": &q.CancelledFrom, "cancelledTo": &q.CancelledTo,
		"finalizedFrom": &q.FinalizedFrom, "finalizedTo": &q.FinalizedTo, "reversedFrom": &q.ReversedFrom, "reversedTo": &q.ReversedTo,
		"tz": &q.TZ, "currency": &q.Currency, "minTotal": &q.MinTotal, "maxTotal": &q.MaxTotal, "sort": &q.Sort,
		"cursor": &q.Cursor, "limit": &q.Limit, "offset": &q.Offset, "count": &q.Count}
	return fields[name]
}

// QueryError is an OrderQuery that ParseOrderQuery refused: for each
// parameter (as OrderQueryParams names it), what is wrong with it and what
// is accepted.
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

// ParseOrderQuery reads an order filter from what a caller wrote; what it
// cannot read is a *QueryError naming every such parameter. The account is
// the caller's to set. now is when a since given as a duration counts back
// from.
func ParseOrderQuery(q OrderQuery, now time.Time) (OrderFilter, error) {
	var (
		f    OrderFilter
		errs = map[string][]string{}
		err  error
	)
	fail := func(param, msg string) { errs[param] = append(errs[param], msg) }

	f.Q = strings.TrimSpace(q.Q)
	if f.Statuses, err = ParseStatuses(q.Statuses); err != nil {
		fail("status", err.Error())
	}
	loc := time.UTC
	if q.TZ != "" {
		if loc, err = ParseZone(q.TZ); err != nil {
			loc = time.UTC
			fail("tz", err.Error())
		}
	}
	for _, r := range []struct {
		from, to string
		f, t     *time.Time
	}{{"createdFrom", "createdTo", &f.CreatedFrom, &f.CreatedTo}, {"paidFrom", "paidTo", &f.PaidFrom, &f.PaidTo},
		{"cancelledFrom", "cancelledTo", &f.CancelledFrom, &f.CancelledTo}, {"finalizedFrom", "finalizedTo", &f.FinalizedFrom, &f.FinalizedTo},
		{"reversedFrom", "reversedTo", &f.ReversedFrom, &f.ReversedTo}} {
		for _, b := range []struct {
			param string
			dst   *time.Time
		}{{r.from, r.f}, {r.to, r.t}} {
			if v := *q.Param(b.param); v != "" {
				if *b.dst, err = ParseTimeBound(v, loc); err != nil {
					fail(b.param, err.Error())
				}
			}
		}
		if !r.f.IsZero() && !r.t.IsZero() && r.t.Before(*r.f) {
			fail(r.to, fmt.Sprintf("is before %s: a range is [%s, %s), with %s at or after %s", r.from, r.from, r.to, r.to, r.from))
		}
	}
	if q.Since != "" {
		if q.CreatedFrom != "" {
			fail("since", "cannot be given with createdFrom, which it predates: use createdFrom alone")
		} else if f.Since, err = ParseSince(q.Since, now); err != nil {
			fail("since", err.Error())
		}
	}
	if v := q.Currency; v != "" {
		if len(v) != 3 || strings.Trim(strings.ToUpper(v), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			fail("currency", fmt.Sprintf("%q is not a currency code: want three letters such as USD", v))
		} else {
			f.Currency = strings.ToUpper(v)
		}
	}
	amount := func(param, v string) *Amount {
		if v == "" {
			return nil
		}
		a, err := ParseAmount(v)
		if err != nil {
			fail(param, fmt.Sprintf("%q is not an amount: want a plain decimal such as 10 or 25.50", v))
			return nil
		}
		return &a
	}
	f.MinTotal, f.MaxTotal = amount("minTotal", q.MinTotal), amount("maxTotal", q.MaxTotal)
	if f.MinTotal != nil && f.MaxTotal != nil && f.MaxTotal.Cmp(*f.MinTotal) < 0 {
		fail("maxTotal", "is below minTotal: want maxTotal at or above minTotal")
	}
	if f.Sort, err = ParseOrderSort(q.Sort); err != nil {
		fail("sort", err.Error())
	}
	if q.Cursor != "" && f.Sort != "" {
		if f.After, err = ParseOrderCursor(q.Cursor, f.Sort); err != nil {
			fail("cursor", err.Error())
		}
	}
	count := func(param, v string, dst *int) {
		if v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				fail(param, "must be a whole number ≥ 0")
			}
			*dst = n
		}
	}
	count("limit", q.Limit, &f.Limit)
	count("offset", q.Offset, &f.Offset)
	switch q.Count {
	case "", "none":
	case "exact":
		f.Count = true
	default:
		fail("count", fmt.Sprintf("%q: want exact (count every order the filter selects) or none", q.Count))
	}
	if len(errs) > 0 {
		return OrderFilter{}, &QueryError{Fields: errs}
	}
	return f, nil
}

// ParseStatuses reads a status filter: statuses separated by commas, in
// any letter case, from one value or several, and the group collected
// (Collected) for its statuses.
func ParseStatuses(values []string) ([]Status, error) {
	var out []Status
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			sts := Collected
			if !strings.EqualFold(strings.TrimSpace(s), StatusGroupCollected) {
				st, err := ParseStatus(s)
				if err != nil {
					return nil, fmt.Errorf("%w, or collected (PAID and FINALIZED: paid and not reversed)", err)
				}
				sts = []Status{st}
			}
			for _, st := range sts {
				if !slices.Contains(out, st) {
					out = append(out, st)
				}
			}
		}
	}
	return out, nil
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

// ParseSince reads a since: an RFC 3339 time, a date (YYYY-MM-DD, UTC) or
// a duration back from now ("24h", "90m").
func ParseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (RFC 3339), a date (YYYY-MM-DD) nor a duration (24h)", v)
}
