package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/ordersync/ordersync"
)

// logEvents upserts event log rows by receipt (account, receipt time,
// MsgID), the store's key: a later record takes the outcome and detail,
// and the keys it has; the lock is held.
func (s *Store) logEvents(events []ordersync.EventRecord) {
	for _, ev := range events {
		ev.ReceivedAt = dbTime(ev.ReceivedAt)
		i := slices.IndexFunc(s.events, func(e ordersync.EventRecord) bool {
			return e.MsgID == ev.MsgID && e.Account == ev.Account && e.ReceivedAt.Equal(ev.ReceivedAt)
		})
		if i < 0 {
			s.events = append(s.events, ev)
			continue
		}
		old := &s.events[i]
		old.Outcome, old.Detail = ev.Outcome, ev.Detail
		old.Type = cmp.Or(ev.Type, old.Type)
		old.OrderType = cmp.Or(ev.OrderType, old.OrderType)
		old.OrderID = cmp.Or(ev.OrderID, old.OrderID)
		old.OrderReference = cmp.Or(ev.OrderReference, old.OrderReference)
		old.OrderCode = cmp.Or(ev.OrderCode, old.OrderCode)
		old.Signature = cmp.Or(ev.Signature, old.Signature)
	}
}

// RecordEvents adds event log rows; a receipt already logged is updated.
func (s *Store) RecordEvents(_ context.Context, events []ordersync.EventRecord) error {
	at := now()
	for i := range events {
		if events[i].MsgID == "" || events[i].Account == "" {
			return fmt.Errorf("record %d events: event %q: MsgID and Account are required", len(events), events[i].MsgID)
		}
	}
	evs := slices.Clone(events)
	for i := range evs {
		if evs[i].ReceivedAt.IsZero() {
			evs[i].ReceivedAt = at
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logEvents(evs)
	return nil
}

// ListEvents returns event log rows, newest first.
func (s *Store) ListEvents(_ context.Context, f ordersync.EventFilter) ([]ordersync.EventRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ordersync.EventRecord
	for _, ev := range s.events {
		switch {
		case f.Account != "" && ev.Account != f.Account,
			f.OrderCode != "" && ev.OrderCode != f.OrderCode,
			f.OrderID != "" && ev.OrderID != f.OrderID,
			f.MsgID != "" && ev.MsgID != f.MsgID:
			continue
		}
		out = append(out, ev)
	}
	return newestPage(out, f.Limit, func(a, b ordersync.EventRecord) int {
		return cmp.Or(b.ReceivedAt.Compare(a.ReceivedAt), cmp.Compare(b.MsgID, a.MsgID))
	}), nil
}
