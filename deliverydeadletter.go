package ordersync

import (
	"context"
	"errors"
	"strings"
	"time"
)

// DeliveryDeadLetter is an event an endpoint refused for good, or that
// outlasted the retry window.
type DeliveryDeadLetter struct {
	ID         int64
	EndpointID string
	Event      HookEvent
	// WebhookID is the delivery's webhook-id; a replay sends it again.
	WebhookID string
	Account   string
	OrderCode string
	Attempts  int
	// LastStatus is the last HTTP status (0: no answer) and LastBody its
	// first KiB; LastError says what failed when there was no answer.
	LastStatus int
	LastBody   string
	LastError  string
	// Body is the delivery's body, exactly as signed.
	Body        []byte
	CreatedAt   time.Time
	ReplayedAt  *time.Time
	ReplayCount int
}

// What a letter keeps of the endpoint's answer: enough to see why, not a
// copy of an error page.
const (
	MaxDeliveryAnswer = 1024 // bytes of LastBody
	MaxDeliveryError  = 500  // bytes of LastError
)

// ValidateDeliveryDeadLetter names what a letter lacks; the store refuses
// it.
func ValidateDeliveryDeadLetter(dl DeliveryDeadLetter) error {
	switch {
	case dl.EndpointID == "":
		return errors.New("EndpointID is required")
	case dl.WebhookID == "":
		return errors.New("WebhookID is required")
	case dl.Event == "":
		return errors.New("Event is required")
	}
	return nil
}

// Bounded is the letter as a store keeps it: LastBody cut to
// MaxDeliveryAnswer bytes, LastError clipped to MaxDeliveryError.
func (dl DeliveryDeadLetter) Bounded() DeliveryDeadLetter {
	if len(dl.LastBody) > MaxDeliveryAnswer {
		dl.LastBody = strings.ToValidUTF8(dl.LastBody[:MaxDeliveryAnswer], "")
	}
	dl.LastError = Clip(dl.LastError, MaxDeliveryError)
	return dl
}

// DeliveryDeadLetterFilter selects delivery dead letters, newest first.
type DeliveryDeadLetterFilter struct {
	EndpointID      string
	IncludeReplayed bool
	Limit           int
}

// DeliveryDeadLetters is their store.
type DeliveryDeadLetters interface {
	AddDeliveryDeadLetter(ctx context.Context, dl DeliveryDeadLetter) (int64, error)
	ListDeliveryDeadLetters(ctx context.Context, f DeliveryDeadLetterFilter) ([]*DeliveryDeadLetter, error)
	FindDeliveryDeadLetter(ctx context.Context, id int64) (*DeliveryDeadLetter, error)
	MarkDeliveryDeadLetterReplayed(ctx context.Context, id int64, at time.Time) error
	// PendingDeliveryDeadLetters counts the letters not replayed per
	// endpoint: its failed deliveries.
	PendingDeliveryDeadLetters(ctx context.Context) (map[string]int, error)
}
