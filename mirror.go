package ordersync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Upstream is the payment link service as ordersync uses it. Errors are
// *UpstreamError.
type Upstream interface {
	CreatePaymentLink(ctx context.Context, params PaymentLinkParams) (*PaymentLinkResult, error)
	GetOrder(ctx context.Context, orderCode string) (*Order, error)
}

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

// Subjects ordersync publishes order events on, through the outbox. They
// are the domain's names, those of DefaultNamespace; a deployment in another
// namespace publishes the same events under it (Namespace.Subject).
const (
	// SubjectPaid carries the PAID trigger, exactly once per order.
	SubjectPaid = "ordersync.orders.paid"
	// SubjectStatusPrefix + STATUS carries every status change.
	SubjectStatusPrefix = "ordersync.orders.status."
	// SubjectOrdersPrefix begins every order subject.
	SubjectOrdersPrefix = "ordersync.orders."
)

// Namespace is the first token (or tokens) of the subjects a deployment
// publishes on, so that several deployments can share one NATS server.
type Namespace string

// DefaultNamespace is the namespace of the domain's subjects.
const DefaultNamespace Namespace = "ordersync"

// OrdersPrefix begins every order subject in the namespace.
func (n Namespace) OrdersPrefix() string { return string(n) + ".orders." }

// Subject is the subject in the namespace of a domain order subject:
// SubjectPaid in namespace "shop" is "shop.orders.paid". A subject already
// in the namespace, or not an order subject at all, is returned as it is.
func (n Namespace) Subject(subject string) string {
	prefix := n.OrdersPrefix()
	if strings.HasPrefix(subject, prefix) {
		return subject
	}
	if rest, ok := strings.CutPrefix(subject, SubjectOrdersPrefix); ok {
		return prefix + rest
	}
	return subject
}

// DomainSubject is the domain subject of an order subject in the
// namespace, the inverse of Subject: "shop.orders.paid" in namespace "shop"
// is SubjectPaid. Any other subject is returned as it is.
func (n Namespace) DomainSubject(subject string) string {
	if rest, ok := strings.CutPrefix(subject, n.OrdersPrefix()); ok {
		return SubjectOrdersPrefix + rest
	}
	return subject
}

// OutboxMessage is an order event committed with the mirror change that
// caused it, waiting to be published.
type OutboxMessage struct {
	ID        int64
	Account   string
	OrderCode string
	Subject   string
	// MsgID is the Nats-Msg-Id: account, order, status and transition number,
	// so a re-publish after a crash is dropped by JetStream's deduplication.
	MsgID     string
	Payload   []byte // the MirroredOrder JSON
	CreatedAt time.Time
	// SentAt is when the relay published the message; nil while it waits.
	SentAt *time.Time
	// From is the status the change left ("" when the order was
	// new); the payload holds the one it reached.
	From Status
	// To is the status the change reached, as the payload's "orderStatus"
	// says it; "" when not known (a message read back from the outbox).
	To Status
	// StatusChangeAt is where an HTTP delivery's body puts "statusChange"
	// in the payload (MirroredOrder.EncodeEvent); 0 when not known.
	StatusChangeAt int
}

// DeadLetterReason says why an event could not be processed.
type DeadLetterReason string

// Reasons of dead letters: each is a permanent failure.
const (
	ReasonUnknownOrder     DeadLetterReason = "unknown_order"     // upstream 404
	ReasonUnresolved       DeadLetterReason = "unresolved"        // no order code for the event's keys
	ReasonMalformed        DeadLetterReason = "malformed"         // the body is not a usable event
	ReasonRetriesExhausted DeadLetterReason = "retries_exhausted" // transient failures outlasted the budget
	ReasonRejected         DeadLetterReason = "rejected"          // upstream refused the request (400, protocol)
)

// DeadLetterReasons lists every reason, in the order help texts give them.
var DeadLetterReasons = []DeadLetterReason{ReasonUnknownOrder, ReasonUnresolved, ReasonMalformed, ReasonRetriesExhausted, ReasonRejected}

// ParseDeadLetterReason accepts a known reason in any letter case; a filter
// by a reason that no dead letter can have would silently match none.
func ParseDeadLetterReason(s string) (DeadLetterReason, error) {
	r := DeadLetterReason(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(DeadLetterReasons, r) {
		return r, nil
	}
	names := make([]string, len(DeadLetterReasons))
	for i, r := range DeadLetterReasons {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown dead letter reason %q (want %s)", s, strings.Join(names, ", "))
}

// DeadLetter is an event that ended in a permanent failure, kept whole so it
// can be replayed.
type DeadLetter struct {
	ID             int64
	MsgID          string
	Account        string
	Reason         DeadLetterReason
	Attempts       int
	LastError      string
	OrderID        ID
	OrderReference string
	OrderCode      string
	// Body and Headers are the queued message as received.
	Body        []byte
	Headers     map[string]string
	CreatedAt   time.Time
	ReplayedAt  *time.Time
	ReplayCount int
}

// ValidateDeadLetter names what a letter lacks; the store refuses it.
func ValidateDeadLetter(dl DeadLetter) error {
	switch {
	case dl.MsgID == "":
		return errors.New("MsgID is required")
	case dl.Account == "":
		return errors.New("Account is required")
	case dl.Reason == "":
		return errors.New("Reason is required")
	}
	return nil
}

// DeadLetterFilter selects dead letters; zero fields select all.
type DeadLetterFilter struct {
	Account         string
	Reason          DeadLetterReason
	IncludeReplayed bool
	// OrderID or OrderReference select the letters of one order's keys, as
	// when an unresolved event's order becomes known.
	OrderID        ID
	OrderReference string
	// RequeuedFrom, when set, selects the letters of events a replay
	// re-queued at or after then (before RequeuedTo, when set) that failed
	// again: what a replay job's "re-queued" turned into.
	RequeuedFrom, RequeuedTo time.Time
	// BeforeID selects letters older than that one (a smaller id): the
	// next page of a listing, which is newest first. Counts ignore it.
	BeforeID int64
	Limit    int
}

// ReconcileFilter selects orders the reconciler should re-fetch.
type ReconcileFilter struct {
	Account string
	// All selects every order, not only those that can still change.
	All bool
	// Since selects orders created at or after it.
	Since time.Time
	Limit int
}

// DueCheck is an order whose reconcile check is due.
type DueCheck struct {
	OrderRef
	// Due is when the check was due.
	Due time.Time
	// State is what the schedule knows of the order when it was claimed.
	State CheckState
}

// CheckBacklog is how far behind its schedule the reconciler is.
type CheckBacklog struct {
	// Due is how many orders' checks are due.
	Due int
	// Oldest is when the most overdue of them was due; zero when none is.
	Oldest time.Time
	// Next is when the earliest check is due, whether it is due yet or
	// not; zero when no order is on the schedule. The reconciler sleeps
	// until then.
	Next time.Time
}

// EventFilter selects event log rows, newest first.
type EventFilter struct {
	Account   string
	OrderCode string
	OrderID   ID
	// MsgID selects one webhook by its message id (the hash the receiver
	// dedupes by): is it in the log, and what became of it.
	MsgID string
	Limit int
}

// DocumentChange is a fetch that changed an order's mirrored document
// after its first fetch: when the fetch was made, why it ran, and which
// fields of the detail changed, as ChangedFields names them (names only,
// never values: they may be a buyer's data). Fields is empty when only
// parts of the document that Order does not read changed.
type DocumentChange struct {
	Account   string
	OrderCode string
	At        time.Time
	Cause     Cause
	Fields    []string
}

// OrderHistory is what the mirror still keeps of how one order changed,
// each list newest first: its document changes (kept as long as the event
// log), its status changes (kept for good), and its outbox messages, the
// PAID trigger among them (published ones kept for the outbox's
// retention; SentAt set, Payload left out).
type OrderHistory struct {
	DocumentChanges []DocumentChange
	StatusChanges   []StatusChange
	Messages        []OutboxMessage
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
	// AllocateFetchSeq reserves n consecutive fetch sequence numbers and
	// returns the first. Every number is greater than any handed out
	// before, by any process sharing the database.
	AllocateFetchSeq(ctx context.Context, n int) (int64, error)
	// ApplyOrders writes fetched orders, their status history, outbox
	// messages and event log rows in one transaction.
	ApplyOrders(ctx context.Context, params []ApplyParams) ([]ApplyResult, error)
	// RecordEvents adds event log rows; a MsgID already logged is updated
	// with the new outcome.
	RecordEvents(ctx context.Context, events []EventRecord) error
	// AddDeadLetter records a permanent failure and logs its event with
	// outcome dead_lettered, in one transaction.
	AddDeadLetter(ctx context.Context, dl DeadLetter) (int64, error)
}

// OrderCodesResolver is a Mirror that also maps many order ids to their
// codes with one read. The worker pool resolves a whole pull's events with
// it when the mirror has it, and one event at a time otherwise.
type OrderCodesResolver interface {
	ResolveOrderCodes(ctx context.Context, account string, ids []ID) (map[ID]string, error)
}

// LastFetchReader is a Mirror that also reads what it holds of orders'
// last applied fetches. The worker pool reads them for a pull's webhooks
// before fetching: a fetch sent after a webhook was received already saw
// its change, so the webhook costs no request.
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

// FetchSeqReader is a Mirror that reads the fetch sequence's current value
// without writing. With it, fetch numbers are handed out from a reservation
// while a read shows no other process took one since.
type FetchSeqReader interface {
	CurrentFetchSeq(ctx context.Context) (int64, error)
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

// Reports answers the back office's reports from the mirror.
type Reports interface {
	// DailyTotals sums the account's orders per calendar day and currency:
	// created, paid, cancelled unpaid, finalized and reversed.
	DailyTotals(ctx context.Context, params DailyTotalsParams) (DailyTotals, error)
}

// DeadLetters is the dead-letter store.
type DeadLetters interface {
	ListDeadLetters(ctx context.Context, filter DeadLetterFilter) ([]*DeadLetter, error)
	FindDeadLetter(ctx context.Context, id int64) (*DeadLetter, error)
	MarkDeadLetterReplayed(ctx context.Context, id int64, at time.Time) error
	// CountDeadLetters counts the letters the filter selects (its Limit
	// and BeforeID aside), per reason.
	CountDeadLetters(ctx context.Context, filter DeadLetterFilter) (map[DeadLetterReason]int, error)
}

// Outbox is the outbox as the relay drains it.
type Outbox interface {
	// PendingOutbox returns up to limit unsent messages, oldest first.
	PendingOutbox(ctx context.Context, limit int) ([]OutboxMessage, error)
	MarkOutboxSent(ctx context.Context, ids []int64, at time.Time) error
}

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

// ReconcileSource lists orders for an on-demand reconcile, most overdue
// first.
type ReconcileSource interface {
	ListReconcileCandidates(ctx context.Context, filter ReconcileFilter) ([]OrderRef, error)
}

// CheckSchedule is the reconciler's schedule as the mirror keeps it: each
// order that can still change has a time its next check is due (set by
// NextCheck whenever the order is applied), so the schedule survives
// restarts and is shared by every process.
type CheckSchedule interface {
	// ClaimDueChecks returns up to limit orders of account whose check is
	// due at now, most overdue first, and moves their due time to retryAt:
	// a check that fails is tried again then, while one that succeeds
	// reschedules the order when its fetch is applied.
	ClaimDueChecks(ctx context.Context, account string, now time.Time, limit int, retryAt time.Time) ([]DueCheck, error)
	// CheckBacklog says how many of account's orders are due at now and
	// since when.
	CheckBacklog(ctx context.Context, account string, now time.Time) (CheckBacklog, error)
	// DeferCheck moves the check of an order still on the schedule to at.
	DeferCheck(ctx context.Context, account, code string, at time.Time) error
	// PullCheck brings the check of an order still on the schedule to at,
	// unless it is due sooner.
	PullCheck(ctx context.Context, account, code string, at time.Time) error
	// PullChecks makes the checks of account's open orders last active at
	// or after activeSince due at at, most recently active first (each a
	// microsecond before the next), or minGap after their last fetch if
	// that is later, and returns their codes.
	PullChecks(ctx context.Context, account string, activeSince, at time.Time, minGap time.Duration) ([]string, error)
	// TightenChecks records account's evidence of lost webhooks, which the
	// schedule reads from then on whenever it sets a check, and brings the
	// checks of the open orders it covers to the dense schedule now.
	TightenChecks(ctx context.Context, account string, dense DenseChecks, now time.Time) (int, error)
	// DenseChecks returns account's evidence of lost webhooks.
	DenseChecks(ctx context.Context, account string) (DenseChecks, error)
}
