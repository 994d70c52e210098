// Package fake holds in-memory fakes of the root package's interfaces, for
// tests that are about a stage's logic and not about the database, the
// queue or the network: Store (the mirror), Queue (the events stream and
// its worker consumer), Upstream (the payment link service) and Endpoints
// (merchants' fulfilment endpoints, as an http.RoundTripper). A fake is
// kept honest by a suite its real counterpart passes too: Store passes
// store/storetest, as store.DB does; Queue passes TestQueueContract with
// the queue package on an embedded JetStream, Upstream
// TestUpstreamContract with paymentlink.Client against the simulator, and
// Endpoints TestEndpointsContract with an httptest server over loopback.
package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

type outboxRow struct {
	msg  ordersync.OutboxMessage
	sent bool
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

// AddDeadLetter records a permanent failure and logs its event; a letter of
// the same MsgID not replayed yet is updated.
func (s *Store) AddDeadLetter(_ context.Context, dl ordersync.DeadLetter) (int64, error) {
	op := fmt.Sprintf("add dead letter %s", dl.MsgID)
	if err := ordersync.ValidateDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	dl.CreatedAt = dbTime(cmp.Or(dl.CreatedAt, time.Now()))
	if dl.Body == nil {
		dl.Body = []byte{}
	}
	if dl.Headers == nil {
		dl.Headers = map[string]string{}
	}
	detail := string(dl.Reason)
	if dl.LastError != "" {
		detail += ": " + dl.LastError
	}
	ev := ordersync.EventRecord{
		MsgID: dl.MsgID, Account: dl.Account, ReceivedAt: dl.CreatedAt, OrderID: dl.OrderID,
		OrderReference: dl.OrderReference, OrderCode: dl.OrderCode, Outcome: ordersync.OutcomeDeadLettered,
		Detail: ordersync.Clip(detail, 500),
	}
	if parsed, err := ordersync.ParseEvent(dl.Body); err == nil {
		ev.Type, ev.OrderType = parsed.Type, parsed.OrderType
		ev.OrderID = cmp.Or(ev.OrderID, parsed.OrderID)
		ev.OrderReference = cmp.Or(ev.OrderReference, parsed.OrderReference)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Logged at the event's receipt when the letter has it, else at the
	// creation of the letter it updates, as the store does, so a
	// redelivery failing again finds the same row.
	if at, err := time.Parse(time.RFC3339Nano, dl.Headers["received_at"]); err == nil {
		ev.ReceivedAt = at
	} else if i := slices.IndexFunc(s.deadLetters, func(old *ordersync.DeadLetter) bool {
		return old.MsgID == dl.MsgID && old.ReplayedAt == nil
	}); i >= 0 {
		ev.ReceivedAt = s.deadLetters[i].CreatedAt
	}
	s.logEvents([]ordersync.EventRecord{ev})
	for _, old := range s.deadLetters {
		if old.MsgID == dl.MsgID && old.ReplayedAt == nil {
			old.Reason, old.Attempts, old.LastError = dl.Reason, dl.Attempts, dl.LastError
			old.OrderID, old.OrderReference, old.OrderCode = dl.OrderID, dl.OrderReference, dl.OrderCode
			old.Body, old.Headers = dl.Body, dl.Headers
			return old.ID, nil
		}
	}
	dl.ID = int64(len(s.deadLetters) + 1)
	dl.ReplayedAt, dl.ReplayCount = nil, 0
	s.deadLetters = append(s.deadLetters, &dl)
	return dl.ID, nil
}

// ListDeadLetters returns dead letters, newest first.
func (s *Store) ListDeadLetters(_ context.Context, f ordersync.DeadLetterFilter) ([]*ordersync.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*ordersync.DeadLetter{}
	for i := len(s.deadLetters) - 1; i >= 0 && len(out) < clampLimit(f.Limit); i-- {
		dl := s.deadLetters[i]
		if !selects(f, dl) || (f.BeforeID > 0 && dl.ID >= f.BeforeID) {
			continue
		}
		c := *dl
		out = append(out, &c)
	}
	return out, nil
}

// CountDeadLetters counts the letters the filter selects, per reason.
func (s *Store) CountDeadLetters(_ context.Context, f ordersync.DeadLetterFilter) (map[ordersync.DeadLetterReason]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[ordersync.DeadLetterReason]int{}
	for _, dl := range s.deadLetters {
		if selects(f, dl) {
			out[dl.Reason]++
		}
	}
	return out, nil
}

// selects reports whether f selects dl, its page aside.
func selects(f ordersync.DeadLetterFilter, dl *ordersync.DeadLetter) bool {
	switch {
	case f.Account != "" && dl.Account != f.Account,
		f.Reason != "" && dl.Reason != f.Reason,
		!f.IncludeReplayed && dl.ReplayedAt != nil:
		return false
	case f.OrderID != "" || f.OrderReference != "":
		byID := f.OrderID != "" && dl.OrderID == f.OrderID
		byRef := f.OrderReference != "" && dl.OrderReference == f.OrderReference
		return byID || byRef
	}
	return true
}

// FindDeadLetter returns one dead letter, replayed or not.
func (s *Store) FindDeadLetter(_ context.Context, id int64) (*ordersync.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.deadLetters)) {
		return nil, fmt.Errorf("find dead letter %d: %w", id, ordersync.ErrNotFound)
	}
	c := *s.deadLetters[id-1]
	return &c, nil
}

// MarkDeadLetterReplayed records that a dead letter was queued again.
func (s *Store) MarkDeadLetterReplayed(_ context.Context, id int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.deadLetters)) {
		return fmt.Errorf("mark dead letter %d replayed: %w", id, ordersync.ErrNotFound)
	}
	dl := s.deadLetters[id-1]
	at = dbTime(at)
	dl.ReplayedAt = &at
	dl.ReplayCount++
	return nil
}

// PendingOutbox returns up to limit unsent messages, oldest first.
func (s *Store) PendingOutbox(_ context.Context, limit int) ([]ordersync.OutboxMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ordersync.OutboxMessage{}
	for _, r := range s.outbox {
		if !r.sent && len(out) < clampLimit(limit) {
			out = append(out, r.msg)
		}
	}
	return out, nil
}

// MarkOutboxSent marks messages published; unknown ids are ignored, and
// a message marked keeps its first time.
func (s *Store) MarkOutboxSent(_ context.Context, ids []int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	at = dbTime(at)
	for _, id := range ids {
		if id >= 1 && id <= int64(len(s.outbox)) && !s.outbox[id-1].sent {
			s.outbox[id-1].sent = true
			s.outbox[id-1].msg.SentAt = &at
		}
	}
	return nil
}

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
