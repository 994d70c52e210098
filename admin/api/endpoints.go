package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
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

// routeEndpoints adds the endpoint routes: managing the HTTP endpoints
// that receive order events, and their delivery dead letters.
func (h *Handlers) routeEndpoints(mux Mux) {
	// Deliveries run where the worker role does; testing and replaying
	// need them, managing endpoints needs only the database.
	eps, dlv := h.deps.Endpoints != nil, h.deps.Deliverer != nil
	const endpoints, deliveries = "endpoints", "deliveries (the worker role)"
	mux.HandleFunc("POST /v1/endpoints", When(eps, endpoints, h.createEndpoint))
	mux.HandleFunc("GET /v1/endpoints", When(eps, endpoints, h.listEndpoints))
	mux.HandleFunc("GET /v1/endpoints/{id}", When(eps, endpoints, h.showEndpoint))
	mux.HandleFunc("PATCH /v1/endpoints/{id}", When(eps, endpoints, h.patchEndpoint))
	mux.HandleFunc("DELETE /v1/endpoints/{id}", When(eps, endpoints, h.deleteEndpoint))
	mux.HandleFunc("POST /v1/endpoints/{id}/rotate-secret", When(eps, endpoints, h.rotateEndpointSecret))
	mux.HandleFunc("POST /v1/endpoints/{id}/test", When(eps && dlv, deliveries, h.testEndpoint))
	mux.HandleFunc("POST /v1/endpoints/{id}/replay", When(eps && dlv, deliveries, h.replayEndpoint))
	mux.HandleFunc("GET /v1/delivery-dead-letters", When(h.deps.DeliveryDeadLetters != nil, "delivery dead letters", h.listDeliveryDeadLetters))
	mux.HandleFunc("POST /v1/delivery-dead-letters/{id}/replay", When(dlv, deliveries, h.replayDeliveryDeadLetter))
	failed := eps && h.deps.DeliveryDeadLetters != nil
	mux.HandleFunc("GET /v1/endpoints/{id}/failed-deliveries", When(failed, "delivery dead letters", h.listFailedDeliveries))
	mux.HandleFunc("POST /v1/endpoints/{id}/failed-deliveries/replay", When(failed && dlv, deliveries, h.replayFailedDeliveries))
}

func hookEvents(in []string) []ordersync.HookEvent {
	if in == nil {
		return nil
	}
	out := make([]ordersync.HookEvent, len(in))
	for i, ev := range in {
		out[i] = ordersync.HookEvent(ev)
	}
	return out
}

// changed makes a change take effect in this process now; the others see
// it at their next refresh.
func (h *Handlers) changed() {
	if h.deps.Deliverer != nil {
		h.deps.Deliverer.Notify()
	}
}

func (h *Handlers) createEndpoint(w http.ResponseWriter, r *http.Request) {
	var body EndpointParamsJSON
	if !DecodeBody(w, r, &body) {
		return
	}
	if body.Secret == "" {
		var err error
		if body.Secret, err = delivery.NewSecret(); err != nil {
			h.office.Fail(w, "create endpoint", err, "")
			return
		}
	} else if err := delivery.ValidateSecret(body.Secret); err != nil {
		h.office.Fail(w, "create endpoint", err, "")
		return
	}
	ep, err := h.deps.Endpoints.CreateEndpoint(r.Context(), ordersync.EndpointParams{
		URL: body.URL, Events: hookEvents(body.Events), Description: body.Description, Secret: body.Secret, RatePerSecond: body.RatePerSecond,
	})
	if err != nil {
		h.office.Fail(w, "create endpoint", err, "")
		return
	}
	h.office.Note(r, "endpoint "+ep.ID)
	h.changed()
	out := EndpointJSONOf(ep)
	out.Secret = ep.Secret
	w.Header().Set("Location", "/v1/endpoints/"+ep.ID)
	WriteJSON(w, http.StatusCreated, out)
}

func (h *Handlers) listEndpoints(w http.ResponseWriter, r *http.Request) {
	eps, err := h.deps.Endpoints.ListEndpoints(r.Context())
	if err != nil {
		h.office.Fail(w, "list endpoints", err, "")
		return
	}
	out := make([]EndpointJSON, len(eps))
	for i, ep := range eps {
		out[i] = EndpointJSONOf(ep)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"endpoints": out, "count": len(out)})
}

func (h *Handlers) showEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ep, err := h.deps.Endpoints.FindEndpoint(r.Context(), id)
	if err != nil {
		h.office.Fail(w, "find endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	WriteJSON(w, http.StatusOK, EndpointJSONOf(ep))
}

func (h *Handlers) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body EndpointUpdateJSON
	if !DecodeBody(w, r, &body) {
		return
	}
	ep, err := h.UpdateEndpoint(r.Context(), id, ordersync.EndpointUpdate{
		URL: body.URL, Events: hookEvents(body.Events), Description: body.Description, Disabled: body.Disabled, RatePerSecond: body.RatePerSecond,
	})
	if err != nil {
		h.office.Fail(w, "update endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	WriteJSON(w, http.StatusOK, EndpointJSONOf(ep))
}

// UpdateEndpoint changes an endpoint, for the API and the console, and
// makes the change take effect.
func (h *Handlers) UpdateEndpoint(ctx context.Context, id string, u ordersync.EndpointUpdate) (*ordersync.Endpoint, error) {
	ep, err := h.deps.Endpoints.UpdateEndpoint(ctx, id, u)
	if err != nil {
		return nil, err
	}
	h.changed()
	return ep, nil
}

func (h *Handlers) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := h.deps.Endpoints.DeleteEndpoint(r.Context(), id); err != nil {
		h.office.Fail(w, "delete endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	if h.deps.Deliverer != nil {
		if err := h.deps.Deliverer.Forget(r.Context(), id); err != nil {
			h.deps.Logger.Warn("admin API: forget deleted endpoint", "endpoint", id, "err", err)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handlers) rotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body RotateSecretJSON
	if r.ContentLength != 0 && !DecodeBody(w, r, &body) {
		return
	}
	ep, err := h.RotateSecret(r.Context(), id, body.Secret)
	if err != nil {
		h.office.Fail(w, "rotate endpoint secret", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	out := EndpointJSONOf(ep)
	out.Secret = ep.Secret
	WriteJSON(w, http.StatusOK, out)
}

// RotateSecret makes secret (a new one when empty) the endpoint's, the
// old one signing for SecretGrace more, for the API and the console. The
// endpoint returned holds the new secret: show it once.
func (h *Handlers) RotateSecret(ctx context.Context, id, secret string) (*ordersync.Endpoint, error) {
	if secret == "" {
		var err error
		if secret, err = delivery.NewSecret(); err != nil {
			return nil, err
		}
	} else if err := delivery.ValidateSecret(secret); err != nil {
		return nil, err
	}
	ep, err := h.deps.Endpoints.RotateEndpointSecret(ctx, id, secret, h.deps.SecretGrace)
	if err != nil {
		return nil, err
	}
	h.changed()
	return ep, nil
}

func (h *Handlers) testEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rep, err := h.deps.Deliverer.Ping(r.Context(), id)
	if err != nil {
		h.office.Fail(w, "test endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	WriteJSON(w, http.StatusOK, rep)
}

func (h *Handlers) replayEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body ReplayJSON
	if !DecodeBody(w, r, &body) {
		return
	}
	since, err := time.Parse(time.RFC3339, body.Since)
	if err != nil {
		WriteProblem(w, http.StatusBadRequest, "invalid since", map[string][]string{"since": {"must be an RFC 3339 time"}})
		return
	}
	n, err := h.deps.Deliverer.Replay(r.Context(), id, since)
	if err != nil {
		h.office.Fail(w, "replay to endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	WriteJSON(w, http.StatusAccepted, map[string]int{"queued": n})
}
