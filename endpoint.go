package ordersync

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// HookEvent is the type of an event delivered to HTTP endpoints.
type HookEvent string

// Events an endpoint subscribes to. The names are the wire names of package
// delivery.
const (
	// HookOrderPaid is the PAID trigger of SubjectPaid, once per order.
	HookOrderPaid HookEvent = "order.paid"
	// HookOrderStatusChanged is every status transition the mirror records.
	HookOrderStatusChanged HookEvent = "order.status_changed"
)

// HookEvents lists every event an endpoint can subscribe to.
var HookEvents = []HookEvent{HookOrderPaid, HookOrderStatusChanged}

// HookEventOf maps an outbox subject to the event it is delivered as.
func HookEventOf(subject string) (HookEvent, bool) {
	switch {
	case subject == SubjectPaid:
		return HookOrderPaid, true
	case len(subject) > len(SubjectStatusPrefix) && subject[:len(SubjectStatusPrefix)] == SubjectStatusPrefix:
		return HookOrderStatusChanged, true
	}
	return "", false
}

// EndpointSource says who manages an endpoint.
type EndpointSource string

// Endpoint sources. A config endpoint is written from the YAML file at
// every start (its URL, events, description and secret follow the file; an
// entry removed from the file is deleted); only its disabled flag changes at
// run time. An API endpoint is created, changed and deleted at run time and
// never touched by the file.
const (
	EndpointFromConfig EndpointSource = "config"
	EndpointFromAPI    EndpointSource = "api"
)

// Endpoint is an HTTP endpoint that receives order events.
type Endpoint struct {
	ID          string
	URL         string
	Events      []HookEvent
	Description string
	Source      EndpointSource
	Disabled    bool
	// DisabledReason is "gone" when a 410 disabled it, "manual" otherwise.
	DisabledReason string
	// Secret signs deliveries. PreviousSecret, until PreviousSecretUntil,
	// signs them as well, so a receiver can switch secrets at its pace.
	Secret              string
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	// RatePerSecond caps the requests sent to the endpoint; 0: no cap
	// beyond the concurrency bound.
	RatePerSecond float64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Wants reports whether the endpoint subscribes to ev.
func (e *Endpoint) Wants(ev HookEvent) bool { return slices.Contains(e.Events, ev) }

// SigningSecrets returns the secrets a delivery at now is signed with: the
// current one, then the previous one while its grace period lasts.
func (e *Endpoint) SigningSecrets(now time.Time) []string {
	s := []string{e.Secret}
	if e.PreviousSecret != "" && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
		s = append(s, e.PreviousSecret)
	}
	return s
}

// Disabled reasons.
const (
	DisabledGone   = "gone"
	DisabledManual = "manual"
)

// EndpointParams creates an endpoint, or describes one of the YAML file.
type EndpointParams struct {
	// ID is chosen by the store for API endpoints; config endpoints name
	// their own.
	ID          string
	URL         string
	Events      []HookEvent
	Description string
	// Secret is required; callers generate one when none is given.
	Secret        string
	RatePerSecond float64
}

// EndpointUpdate changes the fields that are set.
type EndpointUpdate struct {
	URL           *string
	Events        []HookEvent // nil: unchanged
	Description   *string
	Disabled      *bool
	RatePerSecond *float64
}

// ErrInvalidEndpoint is wrapped by ValidateEndpoint.
var ErrInvalidEndpoint = errors.New("invalid endpoint")

// ErrManagedByConfig is returned for a change the YAML file owns.
var ErrManagedByConfig = errors.New("endpoint is managed by the configuration file")

// ValidateEndpointURL checks an endpoint URL: absolute http or https.
func ValidateEndpointURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url: %w", ErrInvalidEndpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: url %q: want an absolute http or https URL", ErrInvalidEndpoint, raw)
	}
	return nil
}

// ValidateHookEvents checks that events is a non-empty list of known
// events without repeats.
func ValidateHookEvents(events []HookEvent) error {
	if len(events) == 0 {
		return fmt.Errorf("%w: events: want at least one of %v", ErrInvalidEndpoint, HookEvents)
	}
	for i, ev := range events {
		if !slices.Contains(HookEvents, ev) {
			return fmt.Errorf("%w: events: unknown %q, want one of %v", ErrInvalidEndpoint, ev, HookEvents)
		}
		if slices.Contains(events[:i], ev) {
			return fmt.Errorf("%w: events: %q twice", ErrInvalidEndpoint, ev)
		}
	}
	return nil
}

// Endpoints is the store of HTTP endpoints, shared by every process.
type Endpoints interface {
	CreateEndpoint(ctx context.Context, p EndpointParams) (*Endpoint, error)
	ListEndpoints(ctx context.Context) ([]*Endpoint, error)
	FindEndpoint(ctx context.Context, id string) (*Endpoint, error)
	UpdateEndpoint(ctx context.Context, id string, u EndpointUpdate) (*Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) error
	// DisableEndpoint disables any endpoint for reason, as after a 410.
	DisableEndpoint(ctx context.Context, id, reason string) error
	// RotateEndpointSecret makes secret current and keeps the old one
	// signing until now+grace.
	RotateEndpointSecret(ctx context.Context, id, secret string, grace time.Duration) (*Endpoint, error)
	// SyncConfigEndpoints makes the config endpoints those of the file.
	SyncConfigEndpoints(ctx context.Context, params []EndpointParams, grace time.Duration) error
}

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

// OrderEvent is one message of the orders stream, as the outbox relay
// published it.
type OrderEvent struct {
	// Subject is the domain subject: SubjectPaid or SubjectStatusPrefix+STATUS.
	Subject string
	// MsgID is the outbox message's Nats-Msg-Id, unique per order event.
	MsgID       string
	Payload     []byte // the MirroredOrder JSON
	PublishedAt time.Time
	// From is the status the change left ("" for a new order, or an
	// event published before it was recorded).
	From Status
	// Account, OrderCode and To (the status reached) are what the payload
	// says, and StatusChangeAt where a delivery's body puts "statusChange"
	// (OutboxMessage.StatusChangeAt), as the relay published them: all
	// set, or StatusChangeAt 0 for an event that came without them.
	Account        string
	OrderCode      string
	To             Status
	StatusChangeAt int
}

// OrderEventDelivery is an order event handed to one endpoint's deliverer.
// It is settled once: Ack when the endpoint took it or it became a dead
// letter, Release when a deliverer that stops hands it back undelivered;
// left unsettled (a process that died), it comes back after the queue's
// ack wait.
type OrderEventDelivery interface {
	Event() OrderEvent
	Ack(ctx context.Context) error
	// Extend tells the queue the event is still being worked on, as while
	// its retries wait.
	Extend() error
	// Release hands the event back at once, for the next reader's Resume
	// to take back before anything later.
	Release() error
}

// OrderEventSource hands out one endpoint's order events.
type OrderEventSource interface {
	// Resume is called by a new reader before its first Next. Events an
	// earlier reader (one that stopped acting by stoppedBy: another process
	// before it took over, or this one) left unsettled come back only after
	// the queue's ack wait, while later events are there at once. So Resume
	// takes back what was left, holding any later event that arrives
	// meanwhile, until all of it is back or the ack wait after stoppedBy has
	// passed; the next Next returns everything it holds, in the order
	// published, however many. It returns an error only when ctx ends, and
	// then has released what it took back.
	Resume(ctx context.Context, stoppedBy time.Time) error
	// Next waits up to wait for at least one event and returns at most max
	// (see Resume), in the order published, as soon as one is there (a long
	// poll); an empty slice, not an error, when none arrived. When ctx ends
	// it ends its pull, releases what it holds and what the pull brought,
	// and returns ctx's error: a reader that stops reads no more, and
	// leaves nothing to wait out the ack wait. An event the queue sent
	// this reader and lost on the way comes back only after the ack wait;
	// Next then holds what came after it, as Resume does, and returns
	// nothing meanwhile, at least once a second.
	Next(ctx context.Context, max int, wait time.Duration) ([]OrderEventDelivery, error)
}

// OrderEventStream is the orders stream as HTTP deliveries read it: each
// endpoint through its own durable consumer, which every process shares and
// which resumes where it stopped.
type OrderEventStream interface {
	// EndpointEvents creates or updates the endpoint's consumer, selecting
	// events, and returns its source. A new consumer starts at the events
	// published from `from` on (the endpoint's creation), however late the
	// consumer itself is created. ackWait is how long a reader may hold an
	// event without extending it before the event is handed out again; zero
	// is the queue's default.
	EndpointEvents(ctx context.Context, endpointID string, events []HookEvent, from time.Time, ackWait time.Duration) (OrderEventSource, error)
	// DeleteEndpointEvents deletes the endpoint's consumer; deleting one
	// that does not exist is not an error.
	DeleteEndpointEvents(ctx context.Context, endpointID string) error
	// OrderEventsSince calls fn for every stored event of events published
	// at or after since, in the order published, until the stream's end
	// when it was called.
	OrderEventsSince(ctx context.Context, since time.Time, events []HookEvent, fn func(OrderEvent) error) error
}

// ErrEndpointDisabled is returned for an action that needs an enabled
// endpoint.
var ErrEndpointDisabled = errors.New("endpoint is disabled")

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
