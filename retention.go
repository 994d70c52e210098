package ordersync

import (
	"context"
	"time"
)

// Retention is the part of the mirror that forgets what has served its
// purpose: outbox messages long published, event log, delivery log and
// document change rows long past, audit records past their retention,
// console sessions expired, replay jobs long ended.
// Each call deletes at most limit rows, oldest first, and says how many.
type Retention interface {
	PruneSentOutbox(ctx context.Context, sentBefore time.Time, limit int) (int, error)
	PruneEventLog(ctx context.Context, receivedBefore time.Time, limit int) (int, error)
	PruneDeliveryLog(ctx context.Context, endedBefore time.Time, limit int) (int, error)
	PruneDocumentChanges(ctx context.Context, before time.Time, limit int) (int, error)
	PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error)
	PruneConsoleSessions(ctx context.Context, expiredBefore time.Time, limit int) (int, error)
	PruneReplayJobs(ctx context.Context, endedBefore time.Time, limit int) (int, error)
}
