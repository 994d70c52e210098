package admin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

func (s *Server) orderEvents(w http.ResponseWriter, r *http.Request) {
	account, code := s.account(r), r.PathValue("orderCode")
	o, err := s.cfg.Orders.FindOrderByCode(r.Context(), account, code)
	if err != nil {
		s.fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	const limit = maxEventLimit
	events, err := s.cfg.Orders.ListEvents(r.Context(), ordersync.EventFilter{Account: account, OrderCode: code, OrderID: o.Order.OrderID, Limit: limit})
	if err != nil {
		s.fail(w, "list events", err, "")
		return
	}
	deliveries, err := s.cfg.Orders.ListDeliveries(r.Context(), ordersync.DeliveryFilter{Account: account, OrderCode: code, Limit: limit})
	if err != nil {
		s.fail(w, "list deliveries", err, "")
		return
	}
	api.WriteJSON(w, http.StatusOK, api.NewEventList(events, deliveries, limit))
}

// listEvents answers "did we hear about this order?" whether or not the
// order is in the mirror: the event log's rows for an orderCode or an
// orderId (both: rows with both), or the latest of all, newest first. Asked
// about an orderCode, it shows the order's deliveries too.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	filter := ordersync.EventFilter{Account: s.account(r), OrderCode: strings.TrimSpace(q.Get("orderCode")),
		OrderID: ordersync.ID(strings.TrimSpace(q.Get("orderId"))), MsgID: strings.TrimSpace(q.Get("msgId"))}
	if !queryCount(w, q, "limit", &filter.Limit) {
		return
	}
	if filter.Limit == 0 {
		filter.Limit = defaultEventLimit
	}
	filter.Limit = min(filter.Limit, maxEventLimit)
	events, err := s.cfg.Orders.ListEvents(r.Context(), filter)
	if err != nil {
		s.fail(w, "list events", err, "")
		return
	}
	var deliveries []ordersync.DeliveryRecord
	if filter.OrderCode != "" {
		if deliveries, err = s.cfg.Orders.ListDeliveries(r.Context(), ordersync.DeliveryFilter{Account: filter.Account, OrderCode: filter.OrderCode, Limit: filter.Limit}); err != nil {
			s.fail(w, "list deliveries", err, "")
			return
		}
	}
	api.WriteJSON(w, http.StatusOK, api.NewEventList(events, deliveries, filter.Limit))
}

// The event log's page: 100 entries unless asked, 1,000 at most.
const (
	defaultEventLimit = 100
	maxEventLimit     = 1000
)
