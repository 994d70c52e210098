package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// Kinds of event log entries.
const (
	EventKindWebhook  = "webhook"
	EventKindDelivery = "delivery"
)

// EventJSON is one entry of the event log as the API writes it: a webhook
// heard (kind "webhook": msgId, receivedAt, signature, …) or how the
// delivery of an order event to an HTTP endpoint ended (kind "delivery":
// endpointId, webhookId, attempts, the last HTTP status). At is when it
// happened, a webhook's receivedAt or a delivery's end: the log is newest
// first by it. Type is the webhook's type or the delivered event's.
type EventJSON struct {
	Kind           string       `json:"kind"`
	At             time.Time    `json:"at"`
	MsgID          string       `json:"msgId,omitempty"`
	ReceivedAt     time.Time    `json:"receivedAt,omitzero"`
	Type           string       `json:"type"`
	OrderType      string       `json:"orderType,omitempty"`
	OrderID        ordersync.ID `json:"orderId,omitempty"` // a number when all digits, as in the order
	OrderReference string       `json:"orderReference,omitempty"`
	OrderCode      string       `json:"orderCode,omitempty"`
	// OrderStatus is the status of the order a delivery carried.
	OrderStatus ordersync.Status `json:"orderStatus,omitempty"`
	Signature   string           `json:"signature,omitempty"`
	EndpointID  string           `json:"endpointId,omitempty"`
	WebhookID   string           `json:"webhookId,omitempty"`
	Attempts    int              `json:"attempts,omitempty"`
	Status      int              `json:"status,omitempty"`
	Outcome     string           `json:"outcome"`
	Detail      string           `json:"detail,omitempty"`
}

// EventList is the answer of the event log endpoints.
type EventList struct {
	Events []EventJSON `json:"events"`
}

// NewEventList is the event log as the API answers it: webhooks heard and
// deliveries ended, merged newest first, at most limit of them (0: all);
// never nil.
func NewEventList(events []ordersync.EventRecord, deliveries []ordersync.DeliveryRecord, limit int) EventList {
	out := make([]EventJSON, 0, len(events)+len(deliveries))
	for _, e := range events {
		out = append(out, EventJSON{Kind: EventKindWebhook, At: e.ReceivedAt, MsgID: e.MsgID, ReceivedAt: e.ReceivedAt, Type: string(e.Type),
			OrderType: e.OrderType, OrderID: e.OrderID, OrderReference: e.OrderReference, OrderCode: e.OrderCode,
			Signature: string(e.Signature), Outcome: string(e.Outcome), Detail: e.Detail})
	}
	for _, d := range deliveries {
		out = append(out, EventJSON{Kind: EventKindDelivery, At: d.At, Type: string(d.Event), OrderCode: d.OrderCode,
			OrderStatus: d.OrderStatus, EndpointID: d.EndpointID, WebhookID: d.WebhookID, Attempts: d.Attempts, Status: d.Status,
			Outcome: string(d.Outcome), Detail: d.Detail})
	}
	// Each list comes newest first; a stable sort keeps their own order
	// among entries of the same instant.
	slices.SortStableFunc(out, func(a, b EventJSON) int { return b.At.Compare(a.At) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return EventList{Events: out}
}

func (h *Handlers) orderEvents(w http.ResponseWriter, r *http.Request) {
	account, code := h.deps.Stores.Account(r), r.PathValue("orderCode")
	o, err := h.deps.Orders.FindOrderByCode(r.Context(), account, code)
	if err != nil {
		h.office.Fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	const limit = MaxEventLimit
	events, err := h.deps.Orders.ListEvents(r.Context(), ordersync.EventFilter{Account: account, OrderCode: code, OrderID: o.Order.OrderID, Limit: limit})
	if err != nil {
		h.office.Fail(w, "list events", err, "")
		return
	}
	deliveries, err := h.deps.Orders.ListDeliveries(r.Context(), ordersync.DeliveryFilter{Account: account, OrderCode: code, Limit: limit})
	if err != nil {
		h.office.Fail(w, "list deliveries", err, "")
		return
	}
	WriteJSON(w, http.StatusOK, NewEventList(events, deliveries, limit))
}

// listEvents answers "did we hear about this order?" whether or not the
// order is in the mirror: the event log's rows for an orderCode or an
// orderId (both: rows with both), or the latest of all, newest first. Asked
// about an orderCode, it shows the order's deliveries too.
func (h *Handlers) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	filter := ordersync.EventFilter{Account: h.deps.Stores.Account(r), OrderCode: strings.TrimSpace(q.Get("orderCode")),
		OrderID: ordersync.ID(strings.TrimSpace(q.Get("orderId"))), MsgID: strings.TrimSpace(q.Get("msgId"))}
	if !QueryCount(w, q, "limit", &filter.Limit) {
		return
	}
	if filter.Limit == 0 {
		filter.Limit = defaultEventLimit
	}
	filter.Limit = min(filter.Limit, MaxEventLimit)
	events, err := h.deps.Orders.ListEvents(r.Context(), filter)
	if err != nil {
		h.office.Fail(w, "list events", err, "")
		return
	}
	var deliveries []ordersync.DeliveryRecord
	if filter.OrderCode != "" {
		if deliveries, err = h.deps.Orders.ListDeliveries(r.Context(), ordersync.DeliveryFilter{Account: filter.Account, OrderCode: filter.OrderCode, Limit: filter.Limit}); err != nil {
			h.office.Fail(w, "list deliveries", err, "")
			return
		}
	}
	WriteJSON(w, http.StatusOK, NewEventList(events, deliveries, filter.Limit))
}

// The event log's page: 100 entries unless asked, 1,000 at most.
const (
	defaultEventLimit = 100
	MaxEventLimit     = 1000
)
