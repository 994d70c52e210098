package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ordersync/ordersync"
)

// RecordDeliveries writes delivery log rows, each replacing its webhook-id's.
func (s *Store) RecordDeliveries(_ context.Context, recs []ordersync.DeliveryRecord) error {
	at := now()
	for _, r := range recs {
		switch {
		case r.WebhookID == "" || r.EndpointID == "":
			return fmt.Errorf("record %d deliveries: delivery %q: WebhookID and EndpointID are required", len(recs), r.WebhookID)
		case r.Event == "" || r.Outcome == "":
			return fmt.Errorf("record %d deliveries: delivery %s: Event and Outcome are required", len(recs), r.WebhookID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		r.At = dbTime(cmp.Or(r.At, at))
		r.Detail = ordersync.Clip(r.Detail, 500)
		s.deliveries = slices.DeleteFunc(s.deliveries, func(d ordersync.DeliveryRecord) bool { return d.WebhookID == r.WebhookID })
		s.deliveries = append(s.deliveries, r)
	}
	return nil
}

// DeliveryHealth counts the deliveries ended at or after since per
// endpoint, with each one's latest failure.
func (s *Store) DeliveryHealth(_ context.Context, since time.Time) (map[string]ordersync.DeliveryHealth, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]ordersync.DeliveryHealth{}
	for _, d := range s.deliveries {
		if d.At.Before(since) {
			continue
		}
		h := out[d.EndpointID]
		if d.Outcome == ordersync.DeliveryDelivered {
			h.Delivered++
		} else {
			h.Failed++
			if h.LastFailure == nil || d.At.After(h.LastFailure.At) || (d.At.Equal(h.LastFailure.At) && d.WebhookID > h.LastFailure.WebhookID) {
				c := d
				h.LastFailure = &c
			}
		}
		out[d.EndpointID] = h
	}
	return out, nil
}

// ListDeliveries returns delivery log rows, newest first.
func (s *Store) ListDeliveries(_ context.Context, f ordersync.DeliveryFilter) ([]ordersync.DeliveryRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ordersync.DeliveryRecord
	for _, d := range s.deliveries {
		if (f.Account == "" || d.Account == f.Account) && (f.OrderCode == "" || d.OrderCode == f.OrderCode) {
			out = append(out, d)
		}
	}
	return newestPage(out, f.Limit, func(a, b ordersync.DeliveryRecord) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(b.WebhookID, a.WebhookID))
	}), nil
}
