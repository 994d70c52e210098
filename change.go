package ordersync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// MirrorState is what the mirror keeps of a fetched order to work out its
// next change against.
type MirrorState struct {
	Status Status
	// DocumentHash names the mirrored document (Change.Document).
	DocumentHash string
	// PaidFired is true once the PAID trigger was queued.
	PaidFired bool
	// Transitions counts the status changes recorded, the first status
	// included; it numbers the status messages' ids.
	Transitions int64
}

// StatusTransition is one row of an order's status history.
type StatusTransition struct {
	// From is "" for the status a new order was first seen in.
	From, To Status
}

// Change is what one fetched order detail records in the mirror besides
// the sync bookkeeping that every newer fetch updates. ChangeOf works it
// out; the store persists it as it is.
type Change struct {
	// Document is the detail as the mirror keeps it: the bytes fetched, or
	// the encoding of an order built in code. State.DocumentHash names it.
	Document []byte
	// State is what the mirror holds after the change: the previous state
	// itself when the document did not change.
	State MirrorState
	// Created is true when the mirror had not fetched the order before.
	Created bool
	// Changed is true when the document differs from the mirrored one, as
	// it always does when Created. An unchanged document records nothing.
	Changed bool
	// From is the status the mirror held before: "" when Created.
	From Status
	// History holds the status transition to record, when the status
	// changed (a new order's first status included); none otherwise.
	History []StatusTransition
	// Messages are the outbox messages the change queues, in order: the
	// status change, then the PAID trigger. Their subjects are the
	// domain's (SubjectPaid, SubjectStatusPrefix+STATUS): the queue moves
	// them into a deployment's namespace (Namespace.Subject). They have no
	// payload or creation time: the store adds the order as mirrored when
	// it commits.
	Messages []OutboxMessage
	// Paid is true when Messages hold the PAID trigger: the first time the
	// mirror sees the order in a paid state (PAID or FINALIZED), whatever
	// it went through before or after.
	Paid bool
}

// ChangeOf works out what the fetched detail next of an order of account
// records in a mirror whose state of the order is prev; prev is nil when the
// mirror never fetched the order. It decides nothing about staleness: a
// fetch older than the mirrored one must not get here.
//
// The rules: a document identical to the mirrored one records nothing. A
// changed one whose status differs (or a new order) records a status
// transition and queues a status message whose id numbers the transition;
// a reversal (PAID back to PENDING, say) is recorded like any other. The
// PAID trigger is queued once per order, by the first document in a paid
// state, even when the mirror never saw PAID itself (an order first seen
// FINALIZED).
func ChangeOf(account string, prev *MirrorState, next *Order) (Change, error) {
	doc := []byte(next.Raw)
	if len(doc) == 0 {
		var err error
		if doc, err = json.Marshal(next); err != nil {
			return Change{}, fmt.Errorf("encode order detail: %w", err)
		}
	}
	sum := sha256.Sum256(doc)
	hash := hex.EncodeToString(sum[:])

	c := Change{Document: doc, Created: prev == nil}
	if prev != nil {
		c.State, c.From = *prev, prev.Status
		if prev.DocumentHash == hash {
			return c, nil
		}
	}
	c.Changed = true
	to := next.OrderStatus
	c.State.Status, c.State.DocumentHash = to, hash

	statusChanged := c.Created || c.From != to
	c.Paid = !c.State.PaidFired && to.IsPaidState()
	if !statusChanged && !c.Paid {
		return c, nil
	}
	ids := account + ":" + next.OrderCode + ":"
	message := func(subject, msgID string) OutboxMessage {
		return OutboxMessage{Account: account, OrderCode: next.OrderCode, Subject: subject, MsgID: msgID, From: c.From, To: to}
	}
	c.Messages = make([]OutboxMessage, 0, 2)
	if statusChanged {
		c.State.Transitions++
		c.History = []StatusTransition{{From: c.From, To: to}}
		msgID := ids + "status:" + string(to) + ":" + strconv.FormatInt(c.State.Transitions, 10)
		c.Messages = append(c.Messages, message(SubjectStatusPrefix+string(to), msgID))
	}
	if c.Paid {
		c.State.PaidFired = true
		c.Messages = append(c.Messages, message(SubjectPaid, ids+"paid"))
	}
	return c, nil
}

// AnnouncesPayment reports whether a webhook of this type says the order
// was paid: SuccessPayment, or Finalized, which only a paid order reaches.
func (t EventType) AnnouncesPayment() bool {
	return t == EventSuccessPayment || t == EventFinalized
}

// HasPaymentEvidence reports whether the document shows that a payment
// was taken: an authorization code or a buyer in its payment. A nil order
// shows none.
func (o *Order) HasPaymentEvidence() bool {
	if o == nil || o.Payment == nil {
		return false
	}
	p := o.Payment
	return p.AuthorizationCode != "" || (p.Buyer != nil && (p.Buyer.Name != "" || p.Buyer.Email != "" || p.Buyer.Phone != ""))
}

// ReversesPayment reports whether a fetch that sees an order become
// CANCELLED (next) reverses a payment that ordersync may never have seen
// PAID: the document shows a payment (HasPaymentEvidence), an earlier one
// of the order did (before), or a webhook announced one (announced). The
// order's paid time is then that of the first evidence (PaidAt), so the
// reversal counts as paid on that day and reversed on the day of the
// cancellation.
func ReversesPayment(next *Order, before, announced bool) bool {
	if next == nil || next.OrderStatus != StatusCancelled {
		return false
	}
	return announced || before || next.HasPaymentEvidence()
}

// PaidAt is when ordersync learned that an order was paid, worked out when
// a fetch made at fetchedAt first sees it in a paid state: the receipt of
// the earliest webhook that announced the payment (announced, nil when none
// did), else the fetch itself. A webhook received after that fetch did not
// tell ordersync anything it had not learned, so the fetch's time stands.
func PaidAt(announced *time.Time, fetchedAt time.Time) time.Time {
	if announced != nil && announced.Before(fetchedAt) {
		return *announced
	}
	return fetchedAt
}
