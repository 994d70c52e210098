package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ordersync/ordersync"
)

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
