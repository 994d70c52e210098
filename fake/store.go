package fake

import (
	"slices"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Store is the SQL mirror in memory: orders, the fetch sequence, the event
// log, dead letters, the outbox, the reconciler's schedule, the delivery
// log and what the back office keeps (backOffice), behind one lock, so each method is one transaction. The domain's
// rules (ordersync.ChangeOf, ordersync.NextCheck) decide what an apply
// records, as they do for store.DB.
type Store struct {
	mu          sync.Mutex
	seq         int64
	seqLease    seqLease
	orders      map[key]*order
	added       int64 // numbers orders as store.DB's row ids do
	events      []ordersync.EventRecord
	deadLetters []*ordersync.DeadLetter
	outbox      []outboxRow
	deliveries  []ordersync.DeliveryRecord
	dense       map[string]ordersync.DenseChecks
	back        backOffice
}

var (
	_ ordersync.Mirror              = (*Store)(nil)
	_ ordersync.OrderCodesResolver  = (*Store)(nil)
	_ ordersync.MirrorReader        = (*Store)(nil)
	_ ordersync.DeadLetters         = (*Store)(nil)
	_ ordersync.Outbox              = (*Store)(nil)
	_ ordersync.CheckSchedule       = (*Store)(nil)
	_ ordersync.DeliveryLog         = (*Store)(nil)
	_ ordersync.AuditLog            = (*Store)(nil)
	_ ordersync.ConsoleSessions     = (*Store)(nil)
	_ ordersync.ReplayJobs          = (*Store)(nil)
	_ ordersync.ReceiverHeartbeats  = (*Store)(nil)
	_ ordersync.DeliveryDeadLetters = (*Store)(nil)
)

// NewStore returns an empty mirror.
func NewStore() *Store {
	return &Store{orders: map[key]*order{}}
}

type key struct{ account, code string }

type order struct {
	row       int64
	ref       ordersync.OrderRef
	fetched   bool
	detail    ordersync.Order // Raw is the mirrored document
	state     ordersync.MirrorState
	sync      ordersync.SyncInfo
	changedAt *time.Time
	nextCheck *time.Time
	// history and changes are its status changes and document changes,
	// oldest first.
	history []ordersync.StatusChange
	changes []ordersync.DocumentChange
}

// now is the store's clock, at the precision both databases keep.
func now() time.Time { return dbTime(time.Now()) }

func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func clampLimit(limit int) int {
	switch {
	case limit <= 0:
		return 100
	case limit > 1000:
		return 1000
	}
	return limit
}

// newestPage is a list's first page as the store returns it: sorted by
// newestFirst, at most limit (clamped) rows, and empty rather than nil.
func newestPage[T any](out []T, limit int, newestFirst func(a, b T) int) []T {
	slices.SortFunc(out, newestFirst)
	out = out[:min(len(out), clampLimit(limit))]
	if out == nil {
		out = []T{}
	}
	return out
}
