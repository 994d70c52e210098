package sim

import (
	"sync/atomic"

	"github.com/ordersync/ordersync"
)

// Stats is what the simulator did, for tests and the demo's report.
type Stats struct {
	Seed           int64                    `json:"seed"`
	Orders         int                      `json:"orders"`
	OrdersByStatus map[ordersync.Status]int `json:"ordersByStatus"`
	// Checkouts counts orders created; CheckoutsRejected the 400 answers.
	Checkouts         int64 `json:"checkouts"`
	CheckoutsRejected int64 `json:"checkoutsRejected"`
	// Unauthorized counts API calls refused for a missing or wrong key.
	Unauthorized int64 `json:"unauthorized"`
	// Gets counts authorized GET /paymentlink/order calls, faulted ones
	// included; GetsByOrder counts them per existing order code (every
	// order is listed, with 0 when never fetched).
	Gets        int64            `json:"gets"`
	GetsByOrder map[string]int64 `json:"getsByOrder"`
	Webhooks    WebhookStats     `json:"webhooks"`
	// Faults counts injected faults by kind.
	Faults map[FaultKind]int64 `json:"faults"`
}

// WebhookStats counts webhook deliveries. Every queued delivery ends
// delivered or given up (Pending until then); dropped events are never
// queued.
type WebhookStats struct {
	// Events counts the events generated (order changes plus the extra
	// other-product and subscription events), dropped ones included.
	Events int64 `json:"events"`
	// Queued counts deliveries queued: events not dropped, plus duplicates.
	Queued     int64 `json:"queued"`
	Delivered  int64 `json:"delivered"`
	Duplicated int64 `json:"duplicated"`
	Dropped    int64 `json:"dropped"`
	Reordered  int64 `json:"reordered"`
	Delayed    int64 `json:"delayed"`
	// FailedAttempts counts attempts answered with a non-2xx status or a
	// network error.
	FailedAttempts int64 `json:"failedAttempts"`
	GivenUp        int64 `json:"givenUp"`
	Pending        int64 `json:"pending"`
}

type counters struct {
	checkouts         atomic.Int64
	checkoutsRejected atomic.Int64
	unauthorized      atomic.Int64
	gets              atomic.Int64
	faults            [numFaultKinds]atomic.Int64 // indexed like faultKinds

	events         atomic.Int64
	queued         atomic.Int64
	delivered      atomic.Int64
	duplicated     atomic.Int64
	dropped        atomic.Int64
	reordered      atomic.Int64
	delayed        atomic.Int64
	failedAttempts atomic.Int64
	givenUp        atomic.Int64
}

// fault counts an injected fault; s is the stream the fault was drawn from,
// numbered like faultKinds.
func (c *counters) fault(s stream) { c.faults[s].Add(1) }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.ExpireDue()
	st := Stats{
		Seed:              s.cfg.Seed,
		Checkouts:         s.counters.checkouts.Load(),
		CheckoutsRejected: s.counters.checkoutsRejected.Load(),
		Unauthorized:      s.counters.unauthorized.Load(),
		Gets:              s.counters.gets.Load(),
		Faults:            make(map[FaultKind]int64, len(faultKinds)),
		Webhooks: WebhookStats{
			Events:         s.counters.events.Load(),
			Queued:         s.counters.queued.Load(),
			Delivered:      s.counters.delivered.Load(),
			Duplicated:     s.counters.duplicated.Load(),
			Dropped:        s.counters.dropped.Load(),
			Reordered:      s.counters.reordered.Load(),
			Delayed:        s.counters.delayed.Load(),
			FailedAttempts: s.counters.failedAttempts.Load(),
			GivenUp:        s.counters.givenUp.Load(),
		},
	}
	for i, k := range faultKinds {
		st.Faults[k] = s.counters.faults[i].Load()
	}
	if s.hooks != nil {
		st.Webhooks.Pending = s.hooks.pendingCount()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st.Orders = len(s.list)
	st.OrdersByStatus = make(map[ordersync.Status]int, len(ordersync.Statuses))
	for _, status := range ordersync.Statuses {
		st.OrdersByStatus[status] = s.byStatus[status]
	}
	st.GetsByOrder = make(map[string]int64, len(s.list))
	for _, o := range s.list {
		st.GetsByOrder[o.detail.OrderCode] = o.gets.Load()
	}
	return st
}
