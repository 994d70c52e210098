package ordersync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// SignatureVerdict is what the receiver concluded about a webhook signature.
type SignatureVerdict string

// Signature verdicts.
const (
	SignatureValid    SignatureVerdict = "valid"
	SignatureInvalid  SignatureVerdict = "invalid"
	SignatureMissing  SignatureVerdict = "missing"
	SignatureInsecure SignatureVerdict = "unchecked" // no secret configured, insecure mode
)

// envelopeFields is how many fields an event's envelope holds.
const envelopeFields = 6

// Envelope is the event as one line of text, so that what the receiver
// parsed travels beside the body (the queue's Ordersync-Event header) and
// the pool reads it without parsing the body again: the type, order type,
// order id, order code, order reference and subscription id, separated by
// '|'. ok is false for an event one line cannot carry (a field holding a
// '|' or a control character, or a space at either end of the line): its
// reader parses the body, as it does for events queued without one.
func (e *Event) Envelope() (line string, ok bool) {
	fields := [envelopeFields]string{string(e.Type), e.OrderType, string(e.OrderID), e.OrderCode, e.OrderReference, string(e.SubscriptionID)}
	n := envelopeFields - 1
	for _, f := range fields {
		for i := 0; i < len(f); i++ {
			if c := f[i]; c < 0x20 || c == 0x7f || c == '|' {
				return "", false
			}
		}
		n += len(f)
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(f)
	}
	line = b.String()
	if line != strings.TrimSpace(line) {
		return "", false
	}
	return line, true
}

// ParseEnvelope reads what Envelope wrote; ok is false for a line it did
// not write.
func ParseEnvelope(line string) (e *Event, ok bool) {
	var fields [envelopeFields]string
	for i := range envelopeFields - 1 {
		j := strings.IndexByte(line, '|')
		if j < 0 {
			return nil, false
		}
		fields[i], line = line[:j], line[j+1:]
	}
	if strings.IndexByte(line, '|') >= 0 {
		return nil, false
	}
	fields[envelopeFields-1] = line
	return &Event{Type: EventType(fields[0]), OrderType: fields[1], OrderID: ID(fields[2]), OrderCode: fields[3],
		OrderReference: fields[4], SubscriptionID: ID(fields[5])}, true
}
