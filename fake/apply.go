package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ordersync/ordersync"
)

// AllocateFetchSeq reserves n consecutive numbers and returns the first.
func (s *Store) AllocateFetchSeq(_ context.Context, n int) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("allocate %d fetch sequence numbers: n must be at least 1", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq += int64(n)
	return s.seq - int64(n) + 1, nil
}

// CurrentFetchSeq is the highest number handed out.
func (s *Store) CurrentFetchSeq(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, nil
}

// orderOf is the order at k, made when missing; the lock is held.
func (s *Store) orderOf(k key, at time.Time) *order {
	o := s.orders[k]
	if o == nil {
		s.added++
		o = &order{row: s.added, ref: ordersync.OrderRef{Account: k.account, Code: k.code}, sync: ordersync.SyncInfo{FirstSeenAt: at}}
		s.orders[k] = o
	}
	return o
}

// RecordOrderRef records an order's keys before its first fetch, filling
// only the keys it lacks.
func (s *Store) RecordOrderRef(_ context.Context, ref ordersync.OrderRef) error {
	if ref.Account == "" || ref.Code == "" {
		return fmt.Errorf("record order ref %s/%s: account and code are required", ref.Account, ref.Code)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := now()
	o := s.orderOf(key{ref.Account, ref.Code}, at)
	if o.ref.ID == "" {
		o.ref.ID = ref.ID
	}
	if o.ref.Reference == "" {
		o.ref.Reference = ref.Reference
	}
	if o.ref.ExpiresAt.IsZero() && !ref.ExpiresAt.IsZero() {
		o.ref.ExpiresAt = dbTime(ref.ExpiresAt)
	}
	if !o.fetched && o.nextCheck == nil {
		due, _ := ordersync.NextCheck(ordersync.CheckState{ActiveAt: at, ExpiresAt: ref.ExpiresAt}, at)
		due = dbTime(due)
		o.nextCheck = &due
	}
	return nil
}

// newest is the order of account whose keys match, most recently created
// (or first seen) first; the lock is held.
func (s *Store) newest(account string, match func(*order) bool) *order {
	var best *order
	for k, o := range s.orders {
		if k.account != account || !match(o) {
			continue
		}
		if best == nil || createdAt(o).After(createdAt(best)) {
			best = o
		}
	}
	return best
}

func createdAt(o *order) time.Time {
	if o.fetched && !o.detail.Created.Time.IsZero() {
		return o.detail.Created.Time
	}
	return o.sync.FirstSeenAt
}

// ResolveOrderCode maps an id, then a reference, to a code.
func (s *Store) ResolveOrderCode(_ context.Context, ref ordersync.OrderRef) (string, error) {
	if ref.Code != "" {
		return ref.Code, nil
	}
	op := fmt.Sprintf("resolve order code of id %q reference %q in %s", ref.ID, ref.Reference, ref.Account)
	s.mu.Lock()
	defer s.mu.Unlock()
	var o *order
	if ref.ID != "" {
		o = s.newest(ref.Account, func(o *order) bool { return o.ref.ID == ref.ID })
	}
	if o == nil && ref.Reference != "" {
		// As store.DB: an event carrying an id is not taken for another
		// order that shares its reference.
		o = s.newest(ref.Account, func(o *order) bool {
			return o.ref.Reference == ref.Reference && (ref.ID == "" || o.ref.ID == "" || o.ref.ID == ref.ID)
		})
	}
	if o == nil {
		return "", fmt.Errorf("%s: %w", op, ordersync.ErrNotFound)
	}
	return o.ref.Code, nil
}

// ResolveOrderCodes maps many ids to codes; unknown ids are missing.
func (s *Store) ResolveOrderCodes(_ context.Context, account string, ids []ordersync.ID) (map[ordersync.ID]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	codes := make(map[ordersync.ID]string, len(ids))
	for _, id := range ids {
		if id == "" {
			continue
		}
		if o := s.newest(account, func(o *order) bool { return o.ref.ID == id }); o != nil {
			codes[id] = o.ref.Code
		}
	}
	return codes, nil
}

// ApplyOrders applies params in order under the sequence guard.
func (s *Store) ApplyOrders(_ context.Context, params []ordersync.ApplyParams) ([]ordersync.ApplyResult, error) {
	op := fmt.Sprintf("apply %d orders", len(params))
	if err := ordersync.ValidateApplyParams(params); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(params) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Worked out on copies first, so a failed batch changes nothing.
	at := now()
	work := map[key]*order{}
	var events []ordersync.EventRecord
	var (
		outbox []ordersync.OutboxMessage
		queued []int // the index in results of each of outbox
	)
	results := make([]ordersync.ApplyResult, len(params))
	for i := range params {
		p := &params[i]
		k := key{p.Account, p.Order.OrderCode}
		o := work[k]
		if o == nil {
			if cur := s.orders[k]; cur != nil {
				c := *cur
				o = &c
			} else {
				o = &order{ref: ordersync.OrderRef{Account: k.account, Code: k.code}, sync: ordersync.SyncInfo{FirstSeenAt: at}}
			}
			work[k] = o
		}
		for _, ev := range p.Events {
			if ev.Account == "" {
				ev.Account = p.Account
			}
			if ev.ReceivedAt.IsZero() {
				ev.ReceivedAt = at
			}
			ev.ReceivedAt = dbTime(ev.ReceivedAt)
			ev.OrderCode = p.Order.OrderCode
			ev.OrderID = cmp.Or(ev.OrderID, p.Order.OrderID)
			ev.OrderReference = cmp.Or(ev.OrderReference, p.Order.OrderReference)
			ev.Outcome = ordersync.OutcomeSynced
			events = append(events, ev)
		}
		if o.sync.FetchSeq >= p.Seq {
			results[i] = ordersync.ApplyResult{From: o.state.Status, Status: o.state.Status}
			continue
		}
		var prev *ordersync.MirrorState
		if o.fetched {
			prev = &o.state
		}
		c, err := ordersync.ChangeOf(p.Account, prev, p.Order)
		if err != nil {
			return nil, fmt.Errorf("%s: order %s/%s: %w", op, p.Account, p.Order.OrderCode, err)
		}
		results[i] = ordersync.ApplyResult{Applied: true, Created: c.Created, Changed: c.Changed, From: c.From, Status: c.State.Status, Paid: c.Paid}
		fetchedAt := at
		if !p.FetchedAt.IsZero() {
			fetchedAt = dbTime(p.FetchedAt)
		}
		o.sync.FetchSeq = p.Seq
		o.sync.FetchCount++
		o.sync.LastSyncedAt = &fetchedAt
		for _, ev := range p.Events {
			if t := dbTime(ev.ReceivedAt); !t.IsZero() && (o.sync.LastEventAt == nil || t.After(*o.sync.LastEventAt)) {
				o.sync.LastEventAt, o.sync.LastEventType = &t, ev.Type
			}
		}
		if c.Changed && !c.Created {
			o.changes = append(slices.Clip(o.changes), ordersync.DocumentChange{Account: p.Account, OrderCode: p.Order.OrderCode, At: fetchedAt,
				Cause: p.Cause, Fields: ordersync.ChangedFields(&o.detail, p.Order)})
		}
		for _, h := range c.History {
			o.history = append(slices.Clip(o.history), ordersync.StatusChange{StatusTransition: h, At: fetchedAt, Cause: p.Cause})
		}
		if c.Changed {
			o.changedAt = &fetchedAt
			o.fetched, o.state = true, c.State
			o.detail = *p.Order
			o.detail.Raw = c.Document
			o.ref.ID, o.ref.Reference = p.Order.OrderID, p.Order.OrderReference
		}
		o.scheduleNextCheck(c.State.Status, fetchedAt, s.dense[p.Account])
		if o.nextCheck != nil {
			results[i].NextCheck = *o.nextCheck
		}
		if len(c.Messages) == 0 {
			continue
		}
		payload, split, err := ordersync.MirroredOrder{Account: p.Account, Order: o.detail, Sync: o.sync}.EncodeEvent()
		if err != nil {
			return nil, fmt.Errorf("%s: encode outbox payload of %s: %w", op, p.Order.OrderCode, err)
		}
		for _, m := range c.Messages {
			m.Payload, m.CreatedAt, m.StatusChangeAt, m.TraceParent = payload, at, split, p.TraceParent
			outbox = append(outbox, m)
			queued = append(queued, i)
		}
	}
	for k, o := range work {
		if cur := s.orders[k]; cur != nil {
			o.row = cur.row
		} else {
			s.added++
			o.row = s.added
		}
		s.orders[k] = o
	}
	s.logEvents(events)
	for j, m := range outbox {
		m.ID = int64(len(s.outbox) + 1)
		results[queued[j]].Messages = append(results[queued[j]].Messages, m)
		// The table keeps no status reached nor offset (the store's has no
		// columns for them).
		m.To, m.StatusChangeAt = "", 0
		s.outbox = append(s.outbox, outboxRow{msg: m})
	}
	return results, nil
}

// activeAt is the order's last activity as the schedule reads it: when it
// was first seen, its last webhook or its last fetched change.
func (o *order) activeAt() time.Time {
	active := o.sync.FirstSeenAt
	for _, t := range []*time.Time{o.sync.LastEventAt, o.changedAt} {
		if t != nil && t.After(active) {
			active = *t
		}
	}
	return active
}

// scheduleNextCheck is store.DB's: the domain's schedule, from the order's
// last activity.
func (o *order) scheduleNextCheck(status ordersync.Status, at time.Time, dense ordersync.DenseChecks) {
	o.nextCheck = nil
	if due, ok := ordersync.NextCheck(o.checkState(status, dense), at); ok {
		due = dbTime(due)
		o.nextCheck = &due
	}
}

// checkState is what the schedule knows of the order.
func (o *order) checkState(status ordersync.Status, dense ordersync.DenseChecks) ordersync.CheckState {
	return ordersync.CheckState{Code: o.ref.Code, Status: status, ActiveAt: o.activeAt(), LastEventType: o.sync.LastEventType, ExpiresAt: o.ref.ExpiresAt, Dense: dense}
}
