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

// ErrInvalidEndpoint is wrapped by the validators below
// (ValidateEndpointParams, ValidateEndpointUpdate and the checks they make).
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

// ValidateEndpointParams checks what every store asks of a new or
// configured endpoint: an id that is a valid name (it names the endpoint's
// JetStream consumer), an absolute http or https URL, known events, a
// secret and a rate of 0 (no cap) or more.
func ValidateEndpointParams(p EndpointParams) error {
	if !ValidName(p.ID) {
		return fmt.Errorf("%w: id %q: want %s", ErrInvalidEndpoint, p.ID, NameRule)
	}
	if err := ValidateEndpointURL(p.URL); err != nil {
		return err
	}
	if err := ValidateHookEvents(p.Events); err != nil {
		return err
	}
	if p.Secret == "" {
		return fmt.Errorf("%w: secret is required", ErrInvalidEndpoint)
	}
	return validateEndpointRate(p.RatePerSecond)
}

// ValidateEndpointUpdate checks the fields u sets as
// ValidateEndpointParams checks them.
func ValidateEndpointUpdate(u EndpointUpdate) error {
	if u.URL != nil {
		if err := ValidateEndpointURL(*u.URL); err != nil {
			return err
		}
	}
	if u.Events != nil {
		if err := ValidateHookEvents(u.Events); err != nil {
			return err
		}
	}
	if u.RatePerSecond != nil {
		return validateEndpointRate(*u.RatePerSecond)
	}
	return nil
}

func validateEndpointRate(r float64) error {
	if r < 0 || r != r {
		return fmt.Errorf("%w: ratePerSecond %v: want 0 (no cap) or more", ErrInvalidEndpoint, r)
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

// ErrEndpointDisabled is returned for an action that needs an enabled
// endpoint.
var ErrEndpointDisabled = errors.New("endpoint is disabled")
