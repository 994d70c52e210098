package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
	// AsOf and Behind, for a search (q=) or a cancelled, finalized or
	// reversed range, say how current its match by the buyer's name or by
	// the range is (ordersync.OrderPage).
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

func (h *Handlers) listOrders(w http.ResponseWriter, r *http.Request) {
	filter, err := ordersync.ParseOrderQuery(OrderQueryOf(r.URL.Query()), time.Now())
	if err != nil {
		h.office.Fail(w, "list orders", err, "")
		return
	}
	choice, err := h.deps.Stores.Choose(r, true)
	if err != nil {
		h.office.Fail(w, "list orders", err, "")
		return
	}
	filter.Account = choice.Account
	page, err := h.deps.Orders.ListOrders(r.Context(), filter)
	if err != nil {
		h.office.Fail(w, "list orders", err, "")
		return
	}
	WriteJSON(w, http.StatusOK, NewOrderList(page))
}

// QueryCount reads the query parameter name, when given, into dst as a
// whole number ≥ 0; otherwise it answers 400 naming the parameter and
// returns false.
func QueryCount(w http.ResponseWriter, q url.Values, name string, dst *int) bool {
	v := q.Get(name)
	if v == "" {
		return true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{name: {"must be a whole number ≥ 0"}})
		return false
	}
	*dst = n
	return true
}

func (h *Handlers) showOrder(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("orderCode")
	choice, err := h.deps.Stores.Choose(r, false)
	if err != nil {
		h.office.Fail(w, "find order", err, "")
		return
	}
	o, err := h.deps.Orders.FindOrderByCode(r.Context(), choice.Account, code)
	if err != nil {
		h.office.Fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	WriteJSON(w, http.StatusOK, o)
}

func (h *Handlers) trackOrder(w http.ResponseWriter, r *http.Request) {
	var req TrackRequest
	if !DecodeBody(w, r, &req) {
		return
	}
	req.OrderCode = strings.TrimSpace(req.OrderCode)
	if req.OrderCode == "" {
		WriteProblem(w, http.StatusBadRequest, "invalid request", map[string][]string{"orderCode": {"The field is required."}})
		return
	}
	h.office.Note(r, "order "+req.OrderCode)
	o, err := h.deps.Follower.TrackOrder(r.Context(), h.deps.Stores.Account(r), req.OrderCode)
	if err != nil {
		h.office.Fail(w, "track order", err, "")
		return
	}
	WriteJSON(w, http.StatusOK, o)
}

func (h *Handlers) createPaymentLink(w http.ResponseWriter, r *http.Request) {
	var params ordersync.PaymentLinkParams
	if !DecodeBody(w, r, &params) {
		return
	}
	res, err := h.deps.Follower.CreatePaymentLink(r.Context(), h.deps.Stores.Account(r), params)
	if err != nil {
		h.office.Fail(w, "create payment link", err, "")
		return
	}
	h.office.Note(r, "order "+res.OrderCode)
	WriteJSON(w, http.StatusOK, res)
}
