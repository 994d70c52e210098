package ordersync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// EventType is the `type` of a webhook event.
type EventType string

// Event types seen from real deployments.
const (
	EventCreated                   EventType = "Created"
	EventUpdated                   EventType = "Updated"
	EventSuccessPayment            EventType = "SuccessPayment"
	EventPaymentError              EventType = "PaymentError"
	EventCancelled                 EventType = "Cancelled"
	EventFinalized                 EventType = "Finalized"
	EventSuccessReverse            EventType = "SuccessReverse"
	EventReverseError              EventType = "ReverseError"
	EventRequires3ds               EventType = "Requires3ds"
	EventThreeDSecureAuthSucceeded EventType = "ThreeDSecureAuthSucceeded"
	EventThreeDSecureAuthFailed    EventType = "ThreeDSecureAuthFailed"
	EventThreeDSecureAuthError     EventType = "ThreeDSecureAuthError"
	EventThreeDSecureAuthExpired   EventType = "ThreeDSecureAuthExpired"
	EventSubscriptionConfirmation  EventType = "SubscriptionConfirmation"
	EventSubscriptionPayment       EventType = "SubscriptionPayment"
	EventSubscriptionCancelled     EventType = "SubscriptionCancelled"
)

// ImpliedStatus is the status an event of this type says the order now has,
// if it says one. A fetched detail that disagrees is drift.
func (t EventType) ImpliedStatus() (Status, bool) {
	switch t {
	case EventSuccessPayment:
		return StatusPaid, true
	case EventCancelled, EventSuccessReverse:
		return StatusCancelled, true
	case EventFinalized:
		return StatusFinalized, true
	}
	return "", false
}

// IsSubscription reports whether the event belongs to subscriptions, which
// have no order to mirror.
func (t EventType) IsSubscription() bool {
	return strings.HasPrefix(string(t), "Subscription")
}

// OrderTypePaymentLink is the orderType of payment-link orders. Other products
// post to the same webhook URL and are acknowledged and ignored.
const OrderTypePaymentLink = "FASTLINK_CHARGE"

// Event is what ordersync reads of a webhook body, decoded tolerantly:
// the keys of the order and what decides whether it is followed. It is a
// hint that an order changed, never the truth: the worker fetches the
// order detail. The rest of the body (description, level, the metadata
// object, which may hold personal data) is kept only as the raw body and
// not decoded: nothing on the pipeline reads it.
type Event struct {
	OrderID        ID        `json:"orderId"`
	OrderCode      string    `json:"orderCode"`
	OrderReference string    `json:"orderReference"`
	OrderType      string    `json:"orderType"`
	Type           EventType `json:"type"`
	SubscriptionID ID        `json:"subscriptionId"`
}

// ErrMalformedEvent is wrapped by ParseEvent for a body that is not a JSON
// object of the expected shape.
var ErrMalformedEvent = errors.New("malformed webhook event")

// ParseEvent decodes a webhook body. Fields it does not read are skipped
// whatever they hold; orderId may be a number or a string.
func ParseEvent(body []byte) (*Event, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedEvent)
	}
	var ev Event
	if err := json.Unmarshal(trimmed, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	ev.OrderCode = strings.TrimSpace(ev.OrderCode)
	ev.OrderReference = strings.TrimSpace(ev.OrderReference)
	return &ev, nil
}

// IgnoreReason says why an event is acknowledged but not followed.
type IgnoreReason string

// The reasons an event is ignored.
const (
	IgnoreOtherProduct IgnoreReason = "other_product"
	IgnoreSubscription IgnoreReason = "subscription"
	IgnoreNoIdentity   IgnoreReason = "no_identity"
)

// Ignored reports whether the event is not about a payment-link order and
// why. An event without an orderType is taken to be a payment-link order.
func (e *Event) Ignored() (IgnoreReason, bool) {
	switch {
	case e.Type.IsSubscription():
		return IgnoreSubscription, true
	case e.OrderType != "" && !strings.EqualFold(e.OrderType, OrderTypePaymentLink):
		return IgnoreOtherProduct, true
	case e.OrderID == "" && e.OrderCode == "" && e.OrderReference == "":
		return IgnoreNoIdentity, true
	}
	return "", false
}

// Ref returns the order keys the event carries.
func (e *Event) Ref(account string) OrderRef {
	return OrderRef{Account: account, Code: e.OrderCode, ID: e.OrderID, Reference: e.OrderReference}
}

// OrderRef identifies an order of an account by whichever keys are known.
type OrderRef struct {
	Account   string
	Code      string
	ID        ID
	Reference string
	// ExpiresAt is when the link expires, when ordersync created it; the
	// reconciler looks at orders near or past expiry first.
	ExpiresAt time.Time
}

// DefaultAccount is the account of a single-merchant deployment.
const DefaultAccount = "default"

// SignatureVerdict is what the receiver concluded about a webhook signature.
type SignatureVerdict string

// Signature verdicts.
const (
	SignatureValid    SignatureVerdict = "valid"
	SignatureInvalid  SignatureVerdict = "invalid"
	SignatureMissing  SignatureVerdict = "missing"
	SignatureInsecure SignatureVerdict = "unchecked" // no secret configured, insecure mode
)

// EventOutcome is what became of a received webhook event.
type EventOutcome string

// Event outcomes, as recorded in the event log.
const (
	OutcomeSynced       EventOutcome = "synced"        // the order was fetched and mirrored
	OutcomeIgnored      EventOutcome = "ignored"       // not a payment-link order
	OutcomeRejected     EventOutcome = "rejected"      // refused with a 4xx, never queued
	OutcomeDeadLettered EventOutcome = "dead_lettered" // a permanent failure, see dead letters
	// OutcomeAlreadyFetched: acknowledged without a fetch, since the mirror
	// held a fetch of the order sent after the event was received.
	OutcomeAlreadyFetched EventOutcome = "already_fetched"
)

// EventRecord is one row of the event log: the back office's answer to "did
// we hear about this order?". MsgID is the queue's deduplication key, so a
// redelivered event is logged once.
type EventRecord struct {
	MsgID          string
	Account        string
	ReceivedAt     time.Time
	Type           EventType
	OrderType      string
	OrderID        ID
	OrderReference string
	OrderCode      string
	Signature      SignatureVerdict
	Outcome        EventOutcome
	Detail         string
}
