package api

import (
	"time"

	"github.com/ordersync/ordersync"
)

// EndpointJSON is an endpoint as the API shows it. Secret is shown only
// when it was just made: at creation and rotation.
type EndpointJSON struct {
	ID                  string     `json:"id"`
	URL                 string     `json:"url"`
	Events              []string   `json:"events"`
	Description         string     `json:"description"`
	Source              string     `json:"source"`
	Disabled            bool       `json:"disabled"`
	DisabledReason      string     `json:"disabledReason,omitempty"`
	Secret              string     `json:"secret,omitempty"`
	PreviousSecretUntil *time.Time `json:"previousSecretUntil,omitempty"`
	RatePerSecond       float64    `json:"ratePerSecond"`
	CreatedAt           time.Time  `json:"createdAt"`
	UpdatedAt           time.Time  `json:"updatedAt"`
}

// EndpointJSONOf converts an endpoint, leaving its secrets out.
func EndpointJSONOf(e *ordersync.Endpoint) EndpointJSON {
	j := EndpointJSON{ID: e.ID, URL: e.URL, Events: []string{}, Description: e.Description, Source: string(e.Source),
		Disabled: e.Disabled, DisabledReason: e.DisabledReason, RatePerSecond: e.RatePerSecond, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	if e.PreviousSecretUntil != nil && e.PreviousSecretUntil.After(time.Now()) {
		j.PreviousSecretUntil = e.PreviousSecretUntil
	}
	for _, ev := range e.Events {
		j.Events = append(j.Events, string(ev))
	}
	return j
}

// EndpointParamsJSON is the body of POST /v1/endpoints.
type EndpointParamsJSON struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	// Secret is generated when empty.
	Secret string `json:"secret"`
	// RatePerSecond caps the requests to the endpoint; 0: none.
	RatePerSecond float64 `json:"ratePerSecond"`
}

// EndpointUpdateJSON is the body of PATCH /v1/endpoints/{id}.
type EndpointUpdateJSON struct {
	URL         *string  `json:"url"`
	Events      []string `json:"events"`
	Description *string  `json:"description"`
	Disabled    *bool    `json:"disabled"`
	// RatePerSecond: 0 removes the cap.
	RatePerSecond *float64 `json:"ratePerSecond"`
}

// RotateSecretJSON is the optional body of POST /v1/endpoints/{id}/rotate-secret.
type RotateSecretJSON struct {
	Secret string `json:"secret"`
}

// ReplayJSON is the body of POST /v1/endpoints/{id}/replay.
type ReplayJSON struct {
	Since string `json:"since"`
}
