package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// OrderView is the Order page.
type OrderView struct {
	Order    *ordersync.MirroredOrder
	Lines    []LineRow
	Created  Moment
	Synced   Moment
	Paid     Moment
	Timeline []TimelineEntry
	Raw      string
	Zone     ZoneSwitch
	MayAct   bool
}

// LineRow is one line item as the Order page shows it.
type LineRow struct {
	SKU, Name, Price, Quantity, SubTotal string
}

// TimelineEntry is one thing that happened to an order.
type TimelineEntry struct {
	At           Moment
	at           time.Time
	Kind, Detail string
}

func (s *Console) orderPage(w http.ResponseWriter, r *http.Request) {
	s.showOrderPage(w, r, r.PathValue("code"))
}

// resyncOrder fetches the order now, as POST /v1/orders/track does, and
// goes back to its page, which says what the fetch found.
func (s *Console) resyncOrder(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("id")
	choice, err := s.cfg.Stores.Choose(r, false)
	if err != nil {
		s.office.Fail(w, "track order", err, "")
		return
	}
	o, err := s.cfg.Follower.TrackOrder(r.Context(), choice.Account, code)
	if err != nil {
		s.office.Fail(w, "track order", err, "")
		return
	}
	s.seeOther(w, r, orderLink(choice.Account, code), fmt.Sprintf("Re-synced: fetched now, the order is %s (fetch %d).",
		o.Order.OrderStatus, o.Sync.FetchCount))
}

func (s *Console) showOrderPage(w http.ResponseWriter, r *http.Request, code string) {
	ctx := r.Context()
	choice, err := s.cfg.Stores.Choose(r, false)
	if err != nil {
		s.office.Fail(w, "find order", err, "")
		return
	}
	o, err := s.cfg.Orders.FindOrderByCode(ctx, choice.Account, code)
	if err != nil {
		s.office.Fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	loc, mode := s.zoneOf(r, o.Order.Store.Timezone)
	view := &OrderView{Order: o, Created: momentOf(o.Order.Created.Time, loc), Synced: momentOfPtr(o.Sync.LastSyncedAt, loc),
		Paid: momentOfPtr(o.Sync.PaidAt, loc),
		Zone: ZoneSwitch{Mode: mode, Store: o.Order.Store.Timezone, Back: orderLink(o.Account, code)}}
	if p, ok := s.office.Principal(r); ok {
		view.MayAct = p.Role.May(ordersync.AccessAct)
	}
	for _, l := range o.Order.LineItems {
		price := l.Price.String()
		if l.PromoPrice != nil {
			price = l.PromoPrice.String() + " (was " + price + ")"
		}
		view.Lines = append(view.Lines, LineRow{SKU: l.SKU, Name: l.Name, Price: price,
			Quantity: fmt.Sprint(l.Quantity), SubTotal: l.SubTotal.String()})
	}
	// Indented as it came: key order, digits and characters stay the
	// service's (a decode and re-encode would sort keys, turn 6.50 into 6.5
	// and escape <). html/template escapes it into the page.
	if raw := o.Order.Raw; len(raw) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") == nil {
			view.Raw = b.String()
		} else {
			view.Raw = string(raw)
		}
	}
	if view.Timeline, err = s.timeline(ctx, o, loc); err != nil {
		s.office.Fail(w, "read the order's timeline", err, "")
		return
	}
	s.page(w, r, http.StatusOK, "order.html", &Page{Title: "Order " + code, Data: view})
}

// timeline is everything the mirror still keeps of what happened to o,
// newest first: webhooks heard, fetches that changed the document and
// which fields, status changes, the PAID trigger, and deliveries to HTTP
// endpoints.
func (s *Console) timeline(ctx context.Context, o *ordersync.MirroredOrder, loc *time.Location) ([]TimelineEntry, error) {
	var out []TimelineEntry
	add := func(at time.Time, kind, detail string) {
		out = append(out, TimelineEntry{At: momentOf(at, loc), at: at, Kind: kind, Detail: detail})
	}
	events, err := s.cfg.Orders.ListEvents(ctx, ordersync.EventFilter{Account: o.Account, OrderCode: o.Order.OrderCode,
		OrderID: o.Order.OrderID, Limit: api.MaxEventLimit})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	for _, e := range events {
		add(e.ReceivedAt, "Webhook "+string(e.Type), strings.TrimSpace(string(e.Outcome)+" "+e.Detail))
	}
	deliveries, err := s.cfg.Orders.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: o.Account, OrderCode: o.Order.OrderCode,
		Limit: api.MaxEventLimit, Failures: true})
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	for _, d := range deliveries {
		kind, detail := deliveryEntry(d)
		add(d.At, kind, detail)
	}
	h, err := s.cfg.Orders.FindOrderHistory(ctx, o.Account, o.Order.OrderCode, api.MaxEventLimit)
	if err != nil {
		return nil, fmt.Errorf("read the order's history: %w", err)
	}
	for _, c := range h.DocumentChanges {
		fields := "only fields ordersync does not read"
		if len(c.Fields) > 0 {
			fields = strings.Join(c.Fields, ", ")
		}
		add(c.At, "Document changed", fields+" (fetch caused by "+string(c.Cause)+")")
	}
	for _, c := range h.StatusChanges {
		from := string(c.From)
		if from == "" {
			from = "first seen"
		}
		add(c.At, "Status "+from+" → "+string(c.To), "fetch caused by "+string(c.Cause))
	}
	paid := false
	for _, m := range h.Messages {
		if m.Subject != ordersync.SubjectPaid {
			continue
		}
		paid = true
		detail := "queued in the outbox; not published yet"
		if m.SentAt != nil {
			detail = "queued in the outbox; published to the stream " + momentOf(*m.SentAt, loc).Shown
		}
		add(m.CreatedAt, "PAID trigger", detail)
	}
	if !paid && o.Sync.PaidAt != nil {
		// Only a published message leaves the outbox: the trigger went out
		// with the fetch that first saw the order in a paid state.
		for _, c := range slices.Backward(h.StatusChanges) {
			if c.To.IsPaidState() {
				add(c.At, "PAID trigger", "queued by this fetch and published; the outbox no longer keeps the message")
				break
			}
		}
	}
	if o.Sync.PaidAt != nil && !slices.ContainsFunc(h.StatusChanges, func(c ordersync.StatusChange) bool { return c.To.IsPaidState() }) {
		add(*o.Sync.PaidAt, "Payment (from evidence)", "no fetch saw the order PAID: its first evidence of a payment (a payment webhook, or a document with an authorization code or a buyer)")
	}
	if o.Sync.PaidAt != nil {
		// The reversal is the first cancellation after the payment, as the
		// daily totals count it.
		for _, c := range slices.Backward(h.StatusChanges) {
			if c.To == ordersync.StatusCancelled && !c.At.Before(*o.Sync.PaidAt) {
				add(c.At, "Payment reversed", "cancelled after the payment: counted as reversed, not as cancelled")
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b TimelineEntry) int { return b.at.Compare(a.at) })
	return out, nil
}
