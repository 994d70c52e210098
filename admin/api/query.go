package api

import (
	"net/url"
	"time"

	"github.com/ordersync/ordersync"
)

// OrderQueryOf is the order filter a query's parameters write
// (ordersync.OrderQueryParams), for ordersync.ParseOrderQuery to read.
func OrderQueryOf(q url.Values) ordersync.OrderQuery {
	oq := ordersync.OrderQuery{Statuses: q["status"]}
	for _, p := range ordersync.OrderQueryParams {
		if f := oq.Param(p); f != nil {
			*f = q.Get(p)
		}
	}
	return oq
}

// OrderFilterOf reads an order filter from a query's parameters.
func OrderFilterOf(q url.Values, now time.Time) (ordersync.OrderFilter, error) {
	return ordersync.ParseOrderQuery(OrderQueryOf(q), now)
}

// FilterQuery is the query string that selects what f selects, its page
// aside (cursor, limit, offset, count): the account, then each filter
// ordersync.ParseOrderQuery reads, times in UTC (a since given as a duration becomes
// the time it meant), keys sorted. The audit trail names the orders an
// export read by it, and ordersync.ParseOrderQuery reads it back to the same filter.
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
