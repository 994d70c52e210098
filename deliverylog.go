package ordersync

import (
	"context"
	"time"
)

// DeliveryOutcome is how the delivery of one order event to one endpoint
// ended.
type DeliveryOutcome string

// Delivery outcomes, as the delivery log records them.
const (
	// DeliveryDelivered: the endpoint answered 2xx.
	DeliveryDelivered DeliveryOutcome = "delivered"
	// DeliveryDeadLettered: refused for good or out of retries; a delivery
	// dead letter keeps it for a replay.
	DeliveryDeadLettered DeliveryOutcome = "dead_lettered"
	// DeliveryGone: the endpoint answered 410 Gone and was disabled; the
	// event waits in its consumer until the endpoint is enabled again.
	DeliveryGone DeliveryOutcome = "gone"
)

// DeliveryRecord is a row of the delivery log: how the delivery of one order
// event to one endpoint last ended. A later end of the same delivery (a
// redelivery, a replay) replaces it, so an order keeps one row per event
// and endpoint however often each was tried.
type DeliveryRecord struct {
	// WebhookID is the delivery's webhook-id: it names one event at one
	// endpoint.
	WebhookID  string
	EndpointID string
	Event      HookEvent
	Account    string
	OrderCode  string
	// OrderStatus is the status of the order the event carried.
	OrderStatus Status
	Outcome     DeliveryOutcome
	// Attempts is how many requests the delivery took; Status is the last
	// one's HTTP status (0: no answer).
	Attempts int
	Status   int
	// Detail says why a delivery did not happen, or that it was a replay.
	Detail string
	// At is when it ended.
	At time.Time
}

// DeliveryFilter selects delivery log rows, newest first.
type DeliveryFilter struct {
	Account   string
	OrderCode string
	Limit     int
	// Failures adds every earlier failed end of a delivery (the
	// dispatcher giving up, a replay failing again) to its latest end.
	Failures bool
}

// DeliveryHealth is how the deliveries to one endpoint ended over a
// period, as the delivery log holds them.
type DeliveryHealth struct {
	// Delivered counts deliveries the endpoint took; Failed those that
	// became dead letters or met a 410 Gone.
	Delivered, Failed int
	// LastFailure is the latest delivery that did not go through, if any.
	LastFailure *DeliveryRecord
}

// SuccessRate is the share of deliveries the endpoint took, and false
// when there were none to judge by.
func (h DeliveryHealth) SuccessRate() (float64, bool) {
	n := h.Delivered + h.Failed
	if n == 0 {
		return 0, false
	}
	return float64(h.Delivered) / float64(n), true
}

// DeliveryLog is where HTTP deliveries record how each ended.
type DeliveryLog interface {
	// RecordDeliveries writes rows, each replacing the row of its
	// webhook-id.
	RecordDeliveries(ctx context.Context, recs []DeliveryRecord) error
}
