package ordersync

import (
	"context"
	"fmt"
	"time"
)

// SyncInfo is ordersync's own bookkeeping about a mirrored order.
type SyncInfo struct {
	FirstSeenAt   time.Time  `json:"firstSeenAt"`
	LastSyncedAt  *time.Time `json:"lastSyncedAt"` // nil until the first fetch
	LastEventAt   *time.Time `json:"lastEventAt"`  // receipt of the last webhook
	LastEventType EventType  `json:"lastEventType,omitempty"`
	FetchCount    int64      `json:"fetchCount"`
	// FetchSeq is the sequence of the fetch the mirror holds; a fetch with a
	// lower sequence never overwrites it.
	FetchSeq int64 `json:"fetchSeq"`
	// PaidAt is when ordersync learned the order was paid (PaidAt); nil
	// until it does. The service gives no payment time of its own.
	PaidAt *time.Time `json:"paidAt"`
	// StatusChangedAt is when the fetch that saw the last status change
	// was made; nil before the first fetch. A document can change without
	// its status changing.
	StatusChangedAt *time.Time `json:"statusChangedAt"`
}

// MirroredOrder is an order as the mirror holds it.
type MirroredOrder struct {
	Account string
	Order   Order
	Sync    SyncInfo
}

// withLists returns the order with empty lists where it has none, so that
// its JSON has lists where the service's has them, never null: an order
// read from the mirror's rows, without its raw document, looks like one
// read with it.
func (o Order) withLists() Order {
	if o.LineItems == nil {
		o.LineItems = []LineItem{}
	}
	if o.Metadata == nil {
		o.Metadata = []MetadataEntry{}
	}
	return o
}

// Cause says why an order was fetched.
type Cause string

// Causes of a fetch.
const (
	CauseWebhook   Cause = "webhook"
	CauseReconcile Cause = "reconcile"
	CauseTrack     Cause = "track"
	CauseCreate    Cause = "create"
	CauseReplay    Cause = "replay"
)

// ApplyParams is one fetched order detail to write into the mirror.
type ApplyParams struct {
	Account string
	// Order is the fetched detail, with Raw set.
	Order *Order
	// Seq was taken from AllocateFetchSeq before the fetch was sent. The
	// apply takes effect only if Seq is greater than the mirror's FetchSeq.
	Seq int64
	// FetchedAt is when the request that answered was sent, not when its
	// answer came: whatever changed upstream before it is in Order (see
	// LastFetchReader).
	FetchedAt time.Time
	Cause     Cause
	// Events are the webhook events this fetch answers. They are written to
	// the event log (outcome synced) in the same transaction, and the last
	// one's receipt becomes SyncInfo.LastEventAt.
	Events []EventRecord
	// TraceParent is the W3C traceparent of the apply's span, kept with
	// the outbox messages it queues; "" with tracing off.
	TraceParent string
}

// ValidateApplyParams checks a batch of ApplyParams before any of it is
// applied: every one names its account, an order with a code, a positive
// Seq, and events with message ids. The error names the first offending
// param by its index.
func ValidateApplyParams(params []ApplyParams) error {
	for i, p := range params {
		switch {
		case p.Account == "":
			return fmt.Errorf("params[%d]: Account is required", i)
		case p.Order == nil || p.Order.OrderCode == "":
			return fmt.Errorf("params[%d]: Order with an OrderCode is required", i)
		case p.Seq < 1:
			return fmt.Errorf("params[%d] (%s): Seq must be positive, got %d", i, p.Order.OrderCode, p.Seq)
		}
		for j, ev := range p.Events {
			if ev.MsgID == "" {
				return fmt.Errorf("params[%d] (%s): event %d has no MsgID", i, p.Order.OrderCode, j)
			}
		}
	}
	return nil
}

// ApplyResult is what one ApplyParams did.
type ApplyResult struct {
	// Applied is false when a fetch that started later was already applied.
	Applied bool
	// Created is true when the mirror did not know the order before.
	Created bool
	// Changed is true when the document differs from the mirrored one (a
	// changed document replaces items, metadata and payment; an unchanged
	// one only touches SyncInfo).
	Changed bool
	// From is the status before this apply, the Change's From: "" when
	// created.
	From   Status
	Status Status
	// Paid is true when this apply queued the PAID trigger: the first time
	// the mirror saw the order PAID or FINALIZED.
	Paid bool
	// NextCheck is when the reconciler next checks the order, as this
	// apply set it by NextCheck, to the microsecond the mirror keeps: a
	// reconciler learns from its own check whether to wake sooner, without
	// reading the schedule. Zero when the order leaves the schedule (a
	// final status) or the apply was stale and left the schedule as it was.
	NextCheck time.Time
	// Messages are the outbox messages the apply queued, as committed (ID
	// and Payload set), for the relay to publish without reading them back.
	Messages []OutboxMessage
}

// Mirror is the SQL mirror as the pipeline writes it. One method, one
// transaction.
type Mirror interface {
	// ResolveOrderCode maps an order's id (then its reference) to its code.
	// It returns ErrNotFound when the mirror knows neither.
	ResolveOrderCode(ctx context.Context, ref OrderRef) (string, error)
	// RecordOrderRef makes the mirror know an order's keys before its first
	// fetch, as when ordersync creates the link. It never overwrites a
	// fetched document.
	RecordOrderRef(ctx context.Context, ref OrderRef) error
	// ApplyOrders writes fetched orders, their status history, outbox
	// messages and event log rows in one transaction.
	ApplyOrders(ctx context.Context, params []ApplyParams) ([]ApplyResult, error)
	// RecordEvents adds event log rows; a MsgID already logged is updated
	// with the new outcome.
	RecordEvents(ctx context.Context, events []EventRecord) error
	// AddDeadLetter records a permanent failure and logs its event with
	// outcome dead_lettered, in one transaction.
	AddDeadLetter(ctx context.Context, dl DeadLetter) (int64, error)
	FetchSequence
	OrderCodesResolver
	LastFetchReader
}

// OrderCodesResolver maps many order ids to their codes with one read.
// The worker pool resolves a whole pull's events with it; the admin API
// needs nothing more of the mirror to resolve ids.
type OrderCodesResolver interface {
	ResolveOrderCodes(ctx context.Context, account string, ids []ID) (map[ID]string, error)
}

// LastFetchReader reads what the mirror holds of orders' last applied
// fetches. The worker pool reads them for a pull's webhooks before
// fetching: a fetch sent after a webhook was received already saw its
// change, so the webhook costs no request.
type LastFetchReader interface {
	// LastFetches reads the last fetches of the account's orders codes
	// with one read per 512 codes; an order never fetched is missing from
	// the map.
	LastFetches(ctx context.Context, account string, codes []string) (map[string]LastFetch, error)
}

// LastFetch is the mirror's record of an order's last applied fetch and of
// its last status change.
type LastFetch struct {
	// At is SyncInfo.LastSyncedAt: when the request of the last applied
	// fetch was sent (ApplyParams.FetchedAt).
	At     time.Time
	Status Status
	// ChangedAt and ChangeCause are when and why the fetch that saw the
	// last status change was made; zero before any status change.
	ChangedAt   time.Time
	ChangeCause Cause
}

// MirrorReader is the mirror as the back office reads it.
type MirrorReader interface {
	FindOrderByCode(ctx context.Context, account, orderCode string) (*MirroredOrder, error)
	ListOrders(ctx context.Context, filter OrderFilter) (OrderPage, error)
	// StoreCurrency is the currency code of the account's latest fetched
	// order, "" before the first.
	StoreCurrency(ctx context.Context, account string) (string, error)
	CountOrdersByStatus(ctx context.Context) (map[Status]int, error)
	ListEvents(ctx context.Context, filter EventFilter) ([]EventRecord, error)
	// ListDeliveries returns how the deliveries of order events to HTTP
	// endpoints ended, newest first.
	ListDeliveries(ctx context.Context, filter DeliveryFilter) ([]DeliveryRecord, error)
	// FindOrderHistory returns what the mirror keeps of how the order
	// changed, at most limit entries of each kind, newest first: the
	// Order page's timeline beside ListEvents and ListDeliveries.
	FindOrderHistory(ctx context.Context, account, orderCode string, limit int) (OrderHistory, error)
	// DeliveryHealth is how the deliveries that ended at or after since
	// went, per endpoint id, from the delivery log: every process's.
	DeliveryHealth(ctx context.Context, since time.Time) (map[string]DeliveryHealth, error)
}
