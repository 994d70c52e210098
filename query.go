package ordersync

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	// AsOf, for a search (Q), is the instant its match by the buyer's name
	// is current at; Behind says that orders changed since are not yet
	// found by name (the back office's indexer is behind).
	AsOf   time.Time
	Behind bool
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
