package api

import (
	"time"

	"github.com/ordersync/ordersync"
)

// OrderList is the body of GET /v1/orders.
type OrderList struct {
	Orders []*ordersync.MirroredOrder `json:"orders"`
	// Count is how many orders this page holds. NextCursor, null on the
	// last page, asks for the next one (cursor=). Total, how many the
	// filter selects in all, is there when asked for (count=exact).
	Count      int     `json:"count"`
	NextCursor *string `json:"nextCursor"`
	Total      *int    `json:"total,omitempty"`
	Offset     int     `json:"offset"`
	Limit      int     `json:"limit"`
	// AsOf and Behind, for a search (q=), say how current its match by the
	// buyer's name is (ordersync.OrderPage).
	AsOf   *time.Time `json:"asOf,omitempty"`
	Behind bool       `json:"behind,omitempty"`
}

// NewOrderList is the answer for one page of a listing: never a null list.
func NewOrderList(page ordersync.OrderPage) OrderList {
	orders := page.Orders
	if orders == nil {
		orders = []*ordersync.MirroredOrder{}
	}
	var next *string
	if page.Next != nil {
		s := page.Next.String()
		next = &s
	}
	l := OrderList{Orders: orders, Count: len(orders), NextCursor: next, Total: page.Total, Offset: page.Offset, Limit: page.Limit, Behind: page.Behind}
	if !page.AsOf.IsZero() {
		l.AsOf = &page.AsOf
	}
	return l
}

// TrackRequest is the body of POST /v1/orders/track.
type TrackRequest struct {
	OrderCode string `json:"orderCode"`
}
