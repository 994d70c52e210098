package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ordersync/ordersync"
)

func (o *order) mirrored() *ordersync.MirroredOrder {
	return &ordersync.MirroredOrder{Account: o.ref.Account, Order: o.detail, Sync: o.sync}
}

// FindOrderByCode returns a fetched order; one only recorded is not found.
func (s *Store) FindOrderByCode(_ context.Context, account, code string) (*ordersync.MirroredOrder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.orders[key{account, code}]
	if o == nil || !o.fetched {
		return nil, fmt.Errorf("find order %s/%s: %w", account, code, ordersync.ErrNotFound)
	}
	return o.mirrored(), nil
}

// LastFetches reads the orders' last applied fetches and last status
// changes; orders never fetched are missing.
func (s *Store) LastFetches(_ context.Context, account string, codes []string) (map[string]ordersync.LastFetch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]ordersync.LastFetch, len(codes))
	for _, code := range codes {
		o := s.orders[key{account, code}]
		if o == nil || !o.fetched || o.sync.LastSyncedAt == nil {
			continue
		}
		lf := ordersync.LastFetch{At: *o.sync.LastSyncedAt, Status: o.detail.OrderStatus}
		if n := len(o.history); n > 0 {
			lf.ChangedAt, lf.ChangeCause = o.history[n-1].At, o.history[n-1].Cause
		}
		out[code] = lf
	}
	return out, nil
}

// FindOrderHistory returns the document changes, status changes and
// outbox messages (without payloads) of a fetched order, at most limit of
// each, newest first.
func (s *Store) FindOrderHistory(_ context.Context, account, code string, limit int) (ordersync.OrderHistory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.orders[key{account, code}]
	if o == nil || !o.fetched {
		return ordersync.OrderHistory{}, fmt.Errorf("find the history of order %s/%s: %w", account, code, ordersync.ErrNotFound)
	}
	limit = clampLimit(limit)
	var h ordersync.OrderHistory
	for i := len(o.changes) - 1; i >= 0 && len(h.DocumentChanges) < limit; i-- {
		c := o.changes[i]
		c.Fields = slices.Clone(c.Fields)
		h.DocumentChanges = append(h.DocumentChanges, c)
	}
	for i := len(o.history) - 1; i >= 0 && len(h.StatusChanges) < limit; i-- {
		h.StatusChanges = append(h.StatusChanges, o.history[i])
	}
	for i := len(s.outbox) - 1; i >= 0 && len(h.Messages) < limit; i-- {
		if m := s.outbox[i].msg; m.Account == account && m.OrderCode == code {
			m.Payload = nil
			h.Messages = append(h.Messages, m)
		}
	}
	return h, nil
}

// ListOrders returns a page of fetched orders, newest first by creation.
// It answers the account, status and since filters with offset pages; the
// back office's search, ranges, sorts and cursors are store.DB's alone, and
// asking the fake for them is an error rather than a wrong answer.
func (s *Store) ListOrders(_ context.Context, f ordersync.OrderFilter) (ordersync.OrderPage, error) {
	if f.Q != "" || !f.CreatedFrom.IsZero() || !f.CreatedTo.IsZero() || !f.PaidFrom.IsZero() || !f.PaidTo.IsZero() ||
		!f.CancelledFrom.IsZero() || !f.CancelledTo.IsZero() || !f.FinalizedFrom.IsZero() || !f.FinalizedTo.IsZero() ||
		!f.ReversedFrom.IsZero() || !f.ReversedTo.IsZero() || f.Currency != "" || f.MinTotal != nil || f.MaxTotal != nil || (f.Sort != "" && f.Sort != ordersync.SortCreatedDesc) || f.After != nil {
		return ordersync.OrderPage{}, errors.New("fake.Store: ListOrders answers only the account, status and since filters")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*order
	for _, o := range s.orders {
		switch {
		case !o.fetched,
			f.Account != "" && o.ref.Account != f.Account,
			len(f.Statuses) > 0 && !slices.Contains(f.Statuses, o.state.Status),
			!f.Since.IsZero() && o.detail.Created.Time.Before(f.Since):
			continue
		}
		all = append(all, o)
	}
	slices.SortFunc(all, func(a, b *order) int {
		return cmp.Or(b.detail.Created.Time.Compare(a.detail.Created.Time), cmp.Compare(a.ref.Account, b.ref.Account), cmp.Compare(a.ref.Code, b.ref.Code))
	})
	page := ordersync.OrderPage{Offset: max(f.Offset, 0), Limit: clampLimit(f.Limit), Orders: []*ordersync.MirroredOrder{}}
	for _, o := range all[min(page.Offset, len(all)):min(page.Offset+page.Limit, len(all))] {
		m := o.mirrored()
		m.Order.Raw = nil // as store.DB: a listing carries no documents
		if f.Summary {
			m.Order.LineItems, m.Order.Metadata = nil, nil
		}
		page.Orders = append(page.Orders, m)
	}
	if f.Count {
		total := len(all)
		if f.CountUpTo > 0 {
			total = min(total, f.CountUpTo+1)
		}
		page.Total = &total
	}
	return page, nil
}

// StoreCurrency is the currency of the account's latest order that has one.
func (s *Store) StoreCurrency(_ context.Context, account string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var latest *order
	for k, o := range s.orders {
		if k.account == account && o.detail.Store.CurrencyCode != "" && (latest == nil || o.row > latest.row) {
			latest = o
		}
	}
	if latest == nil {
		return "", nil
	}
	return latest.detail.Store.CurrencyCode, nil
}

// CountOrdersByStatus counts orders per status, every status present and
// orders not fetched yet under "".
func (s *Store) CountOrdersByStatus(context.Context) (map[ordersync.Status]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := make(map[ordersync.Status]int, len(ordersync.Statuses))
	for _, st := range ordersync.Statuses {
		counts[st] = 0
	}
	for _, o := range s.orders {
		counts[o.state.Status]++
	}
	return counts, nil
}
