package ordersync

import (
	"context"
	"time"
)

// DefaultHeartbeatInterval is how often a receiver records its heartbeat.
// A reconciler counts the receivers away after three intervals without a
// beat, so a pause shorter than half a minute is not taken for an outage.
const DefaultHeartbeatInterval = 10 * time.Second

// ReceiverBeat is a receiver process's heartbeat for one account: when it
// started, when it last beat, and the webhooks it answered since it
// started. The reconciler reads the beats to know when no receiver was
// listening and whether webhooks were being lost.
type ReceiverBeat struct {
	ReceiverID string
	Account    string
	StartedAt  time.Time
	BeatAt     time.Time
	WebhookCounts
}

// WebhookCounts counts the webhooks a receiver answered for an account.
type WebhookCounts struct {
	// Accepted webhooks were made durable and answered 2xx.
	Accepted int64
	// Unavailable ones were answered 503: the provider retries them, or
	// gives up.
	Unavailable int64
	// Refused ones failed their signature or were not events.
	Refused int64
}

// ReceiverHeartbeats keeps the receivers' heartbeats in the mirror.
type ReceiverHeartbeats interface {
	// RecordReceiverBeats writes a receiver's beats, one per account.
	RecordReceiverBeats(ctx context.Context, beats []ReceiverBeat) error
	// ListReceiverBeats returns account's beats of receivers that beat at
	// or after since, oldest start first.
	ListReceiverBeats(ctx context.Context, account string, since time.Time) ([]ReceiverBeat, error)
	// PruneReceiverBeats deletes the beats older than before.
	PruneReceiverBeats(ctx context.Context, before time.Time) (int, error)
}
