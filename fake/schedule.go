package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ordersync/ordersync"
)

// dueOrders are account's orders due at now, most overdue first; the lock
// is held.
func (s *Store) dueOrders(account string, at time.Time) []*order {
	var due []*order
	for k, o := range s.orders {
		if k.account == account && o.nextCheck != nil && !o.nextCheck.After(at) {
			due = append(due, o)
		}
	}
	slices.SortFunc(due, func(a, b *order) int {
		return cmp.Or(a.nextCheck.Compare(*b.nextCheck), cmp.Compare(a.ref.Code, b.ref.Code))
	})
	return due
}

// ClaimDueChecks returns up to limit due orders and moves them to retryAt.
func (s *Store) ClaimDueChecks(_ context.Context, account string, at time.Time, limit int, retryAt time.Time) ([]ordersync.DueCheck, error) {
	if limit < 1 {
		return nil, fmt.Errorf("claim due checks of %s: limit must be ≥ 1, got %d", account, limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ordersync.DueCheck
	retryAt = dbTime(retryAt)
	for _, o := range s.dueOrders(account, dbTime(at)) {
		if len(out) == limit {
			break
		}
		out = append(out, ordersync.DueCheck{OrderRef: o.ref, Due: *o.nextCheck, State: o.checkState(o.state.Status, s.dense[account])})
		next := retryAt
		o.nextCheck = &next
	}
	return out, nil
}

// CheckBacklog counts account's due orders and finds the most overdue.
func (s *Store) CheckBacklog(_ context.Context, account string, at time.Time) (ordersync.CheckBacklog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkBacklog(account, dbTime(at)), nil
}

// checkBacklog is CheckBacklog with s.mu held, which the overview shares.
func (s *Store) checkBacklog(account string, at time.Time) ordersync.CheckBacklog {
	var b ordersync.CheckBacklog
	if due := s.dueOrders(account, at); len(due) > 0 {
		b.Due, b.Oldest = len(due), *due[0].nextCheck
	}
	for k, o := range s.orders {
		if k.account == account && o.nextCheck != nil && (b.Next.IsZero() || o.nextCheck.Before(b.Next)) {
			b.Next = *o.nextCheck
		}
	}
	return b
}

// DeferCheck moves the check of an order still on the schedule to at.
func (s *Store) DeferCheck(_ context.Context, account, code string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.orders[key{account, code}]; o != nil && o.nextCheck != nil {
		at = dbTime(at)
		o.nextCheck = &at
	}
	return nil
}

// PullCheck brings the check of an order still on the schedule to at,
// unless it is due sooner.
func (s *Store) PullCheck(_ context.Context, account, code string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.orders[key{account, code}]; o != nil && o.nextCheck != nil && o.nextCheck.After(at) {
		at = dbTime(at)
		o.nextCheck = &at
	}
	return nil
}

// PullChecks is store.DB's: account's open orders last active at or after
// activeSince are due at at, most recently active first, or minGap after
// their last fetch if that is later; at most limit of them when limit > 0.
func (s *Store) PullChecks(_ context.Context, account string, activeSince, at time.Time, minGap time.Duration, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pulled []*order
	for k, o := range s.orders {
		if k.account == account && o.nextCheck != nil && !o.activeAt().Before(activeSince) {
			pulled = append(pulled, o)
		}
	}
	slices.SortFunc(pulled, func(a, b *order) int {
		return cmp.Or(b.activeAt().Compare(a.activeAt()), cmp.Compare(a.ref.Code, b.ref.Code))
	})
	if limit > 0 && len(pulled) > limit {
		pulled = pulled[:limit]
	}
	codes := make([]string, 0, len(pulled))
	for i, o := range pulled {
		due := dbTime(at).Add(time.Duration(i-len(pulled)) * time.Microsecond)
		if o.sync.LastSyncedAt != nil && o.sync.LastSyncedAt.Add(minGap).After(due) {
			due = dbTime(o.sync.LastSyncedAt.Add(minGap))
		}
		o.nextCheck = &due
		codes = append(codes, o.ref.Code)
	}
	return codes, nil
}

// DenseChecks is store.DB's: account's evidence of lost webhooks.
func (s *Store) DenseChecks(_ context.Context, account string) (ordersync.DenseChecks, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dense[account], nil
}

// TightenChecks is store.DB's: it records the evidence and brings the
// checks of the open orders it covers to the dense schedule.
func (s *Store) TightenChecks(_ context.Context, account string, dense ordersync.DenseChecks, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dense == nil {
		s.dense = map[string]ordersync.DenseChecks{}
	}
	dense.Since, dense.Until = dbTime(dense.Since), dbTime(dense.Until)
	s.dense[account] = dense
	n := 0
	for k, o := range s.orders {
		if k.account != account || o.nextCheck == nil || o.activeAt().Before(dense.Since) {
			continue
		}
		if due, ok := ordersync.NextCheck(o.checkState(o.state.Status, dense), now); ok && due.Before(*o.nextCheck) {
			due = dbTime(due)
			o.nextCheck = &due
			n++
		}
	}
	return n, nil
}
