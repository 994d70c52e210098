package ordersync

import (
	"context"
	"time"
)

// DeliveryReport is the answer to one delivery made on request: a ping, a
// dead letter replayed.
type DeliveryReport struct {
	WebhookID string `json:"webhookId"`
	Delivered bool   `json:"delivered"`
	Status    int    `json:"status,omitempty"`
	Answer    string `json:"answer,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Deliverer is the HTTP delivery engine as the admin API drives it.
type Deliverer interface {
	// Notify makes a change to the endpoints take effect now.
	Notify()
	// Forget stops delivering to a deleted endpoint and drops its consumer.
	Forget(ctx context.Context, endpointID string) error
	// Ping sends a signed ping once.
	Ping(ctx context.Context, endpointID string) (DeliveryReport, error)
	// Replay redelivers every event since then; it returns how many.
	Replay(ctx context.Context, endpointID string, since time.Time) (int, error)
	// ReplayDeadLetter sends a delivery dead letter again, once.
	ReplayDeadLetter(ctx context.Context, id int64) (DeliveryReport, error)
}
