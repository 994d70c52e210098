package fake

import (
	"context"
	"time"

	"github.com/ordersync/ordersync"
)

type outboxRow struct {
	msg  ordersync.OutboxMessage
	sent bool
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
