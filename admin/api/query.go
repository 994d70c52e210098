package api

import (
	"net/url"

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
