package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) {
	filter, err := parseOrderQuery(r.URL.Query(), time.Now())
	if err != nil {
		s.fail(w, "list orders", err, "")
		return
	}
	choice, err := s.chooseStore(r, true)
	if err != nil {
		s.fail(w, "list orders", err, "")
		return
	}
	filter.Account = choice.Account
	page, err := s.cfg.Orders.ListOrders(r.Context(), filter)
	if err != nil {
		s.fail(w, "list orders", err, "")
		return
	}
	api.WriteJSON(w, http.StatusOK, api.NewOrderList(page))
}

// queryCount reads the query parameter name, when given, into dst as a
// whole number ≥ 0; otherwise it answers 400 naming the parameter and
// returns false.
func queryCount(w http.ResponseWriter, q url.Values, name string, dst *int) bool {
	v := q.Get(name)
	if v == "" {
		return true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		api.WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{name: {"must be a whole number ≥ 0"}})
		return false
	}
	*dst = n
	return true
}

func (s *Server) showOrder(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("orderCode")
	choice, err := s.chooseStore(r, false)
	if err != nil {
		s.fail(w, "find order", err, "")
		return
	}
	o, err := s.cfg.Orders.FindOrderByCode(r.Context(), choice.Account, code)
	if err != nil {
		s.fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	api.WriteJSON(w, http.StatusOK, o)
}

func (s *Server) trackOrder(w http.ResponseWriter, r *http.Request) {
	var req api.TrackRequest
	if !api.DecodeBody(w, r, &req) {
		return
	}
	req.OrderCode = strings.TrimSpace(req.OrderCode)
	if req.OrderCode == "" {
		api.WriteProblem(w, http.StatusBadRequest, "invalid request", map[string][]string{"orderCode": {"The field is required."}})
		return
	}
	noteObject(r, "order "+req.OrderCode)
	o, err := s.cfg.Follower.TrackOrder(r.Context(), s.account(r), req.OrderCode)
	if err != nil {
		s.fail(w, "track order", err, "")
		return
	}
	api.WriteJSON(w, http.StatusOK, o)
}

func (s *Server) createPaymentLink(w http.ResponseWriter, r *http.Request) {
	var params ordersync.PaymentLinkParams
	if !api.DecodeBody(w, r, &params) {
		return
	}
	res, err := s.cfg.Follower.CreatePaymentLink(r.Context(), s.account(r), params)
	if err != nil {
		s.fail(w, "create payment link", err, "")
		return
	}
	noteObject(r, "order "+res.OrderCode)
	api.WriteJSON(w, http.StatusOK, res)
}
