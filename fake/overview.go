package fake

import (
	"context"
	"slices"
	"time"

	"github.com/ordersync/ordersync"
)

var _ ordersync.OverviewReader = (*Store)(nil)

// Overview reads the overview as store.DB does. The fake keeps no
// endpoints (it is no ordersync.Endpoints), so it lists none.
func (s *Store) Overview(_ context.Context, params ordersync.OverviewParams) (ordersync.Overview, error) {
	p := params.WithDefaults()
	out := ordersync.Overview{Params: p}
	now, since := dbTime(p.Now), dbTime(p.Now.Add(-p.Window))
	s.mu.Lock()
	defer s.mu.Unlock()
	var synced []ordersync.EventRecord
	for _, e := range s.events {
		if e.Account != p.Account || e.ReceivedAt.Before(since) || e.ReceivedAt.After(now) {
			continue
		}
		out.Webhooks++
		switch e.Outcome {
		case ordersync.OutcomeSynced:
			out.Mirrored++
			synced = append(synced, e)
		case ordersync.OutcomeAlreadyFetched:
			out.Mirrored++
		}
	}
	slices.SortStableFunc(synced, func(a, b ordersync.EventRecord) int { return b.ReceivedAt.Compare(a.ReceivedAt) })
	var lags []time.Duration
	for _, e := range synced[:min(len(synced), ordersync.MaxLagSamples)] {
		o := s.orders[key{e.Account, e.OrderCode}]
		if e.OrderCode == "" || o == nil || o.sync.LastEventAt == nil || !o.sync.LastEventAt.Equal(e.ReceivedAt) || o.sync.LastSyncedAt == nil {
			continue
		}
		lags = append(lags, max(0, o.sync.LastSyncedAt.Sub(e.ReceivedAt)))
	}
	out.Lag = ordersync.LagOf(lags)
	for k, o := range s.orders {
		if k.account != p.Account || o.fetched {
			continue
		}
		out.Waiting++
		if out.OldestWaiting.IsZero() || o.sync.FirstSeenAt.Before(out.OldestWaiting) {
			out.OldestWaiting = o.sync.FirstSeenAt
		}
	}
	out.Checks = s.checkBacklog(p.Account, now)
	for _, r := range s.outbox {
		if r.sent {
			continue
		}
		if out.Unsent == 0 {
			out.OldestUnsent = &ordersync.OutboxHead{ID: r.msg.ID, Subject: r.msg.Subject, OrderCode: r.msg.OrderCode, CreatedAt: r.msg.CreatedAt}
		}
		out.Unsent++
	}
	counts := map[ordersync.DeadLetterReason]int{}
	for _, dl := range s.deadLetters {
		if dl.Account == p.Account && dl.ReplayedAt == nil {
			counts[dl.Reason]++
		}
	}
	for r, n := range counts {
		out.DeadLetters = append(out.DeadLetters, ordersync.ReasonCount{Reason: r, Count: n})
	}
	ordersync.SortReasonCounts(out.DeadLetters)
	return out, nil
}
