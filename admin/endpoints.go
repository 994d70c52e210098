package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// routeEndpoints adds the endpoint routes: managing the HTTP endpoints
// that receive order events, and their delivery dead letters.
func (s *Server) routeEndpoints() {
	// Deliveries run where the worker role does; testing and replaying
	// need them, managing endpoints needs only the database.
	eps, dlv := s.cfg.Endpoints != nil, s.cfg.Deliverer != nil
	const endpoints, deliveries = "endpoints", "deliveries (the worker role)"
	s.mux.HandleFunc("POST /v1/endpoints", when(eps, endpoints, s.createEndpoint))
	s.mux.HandleFunc("GET /v1/endpoints", when(eps, endpoints, s.listEndpoints))
	s.mux.HandleFunc("GET /v1/endpoints/{id}", when(eps, endpoints, s.showEndpoint))
	s.mux.HandleFunc("PATCH /v1/endpoints/{id}", when(eps, endpoints, s.patchEndpoint))
	s.mux.HandleFunc("DELETE /v1/endpoints/{id}", when(eps, endpoints, s.deleteEndpoint))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/rotate-secret", when(eps, endpoints, s.rotateEndpointSecret))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/test", when(eps && dlv, deliveries, s.testEndpoint))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/replay", when(eps && dlv, deliveries, s.replayEndpoint))
	s.mux.HandleFunc("GET /v1/delivery-dead-letters", when(s.cfg.DeliveryDeadLetters != nil, "delivery dead letters", s.listDeliveryDeadLetters))
	s.mux.HandleFunc("POST /v1/delivery-dead-letters/{id}/replay", when(dlv, deliveries, s.replayDeliveryDeadLetter))
	failed := eps && s.cfg.DeliveryDeadLetters != nil
	s.mux.HandleFunc("GET /v1/endpoints/{id}/failed-deliveries", when(failed, "delivery dead letters", s.listFailedDeliveries))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/failed-deliveries/replay", when(failed && dlv, deliveries, s.replayFailedDeliveries))
}

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
func (s *Server) changed() {
	if s.cfg.Deliverer != nil {
		s.cfg.Deliverer.Notify()
	}
}

func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request) {
	var body EndpointParamsJSON
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Secret == "" {
		var err error
		if body.Secret, err = delivery.NewSecret(); err != nil {
			s.fail(w, "create endpoint", err, "")
			return
		}
	} else if err := delivery.ValidateSecret(body.Secret); err != nil {
		s.fail(w, "create endpoint", err, "")
		return
	}
	ep, err := s.cfg.Endpoints.CreateEndpoint(r.Context(), ordersync.EndpointParams{
		URL: body.URL, Events: hookEvents(body.Events), Description: body.Description, Secret: body.Secret, RatePerSecond: body.RatePerSecond,
	})
	if err != nil {
		s.fail(w, "create endpoint", err, "")
		return
	}
	noteObject(r, "endpoint "+ep.ID)
	s.changed()
	out := EndpointJSONOf(ep)
	out.Secret = ep.Secret
	w.Header().Set("Location", "/v1/endpoints/"+ep.ID)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	eps, err := s.cfg.Endpoints.ListEndpoints(r.Context())
	if err != nil {
		s.fail(w, "list endpoints", err, "")
		return
	}
	out := make([]EndpointJSON, len(eps))
	for i, ep := range eps {
		out[i] = EndpointJSONOf(ep)
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoints": out, "count": len(out)})
}

func (s *Server) showEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ep, err := s.cfg.Endpoints.FindEndpoint(r.Context(), id)
	if err != nil {
		s.fail(w, "find endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	writeJSON(w, http.StatusOK, EndpointJSONOf(ep))
}

func (s *Server) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body EndpointUpdateJSON
	if !decodeBody(w, r, &body) {
		return
	}
	ep, err := s.updateEndpoint(r.Context(), id, ordersync.EndpointUpdate{
		URL: body.URL, Events: hookEvents(body.Events), Description: body.Description, Disabled: body.Disabled, RatePerSecond: body.RatePerSecond,
	})
	if err != nil {
		s.fail(w, "update endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	writeJSON(w, http.StatusOK, EndpointJSONOf(ep))
}

// updateEndpoint changes an endpoint, for the API and the console, and
// makes the change take effect.
func (s *Server) updateEndpoint(ctx context.Context, id string, u ordersync.EndpointUpdate) (*ordersync.Endpoint, error) {
	ep, err := s.cfg.Endpoints.UpdateEndpoint(ctx, id, u)
	if err != nil {
		return nil, err
	}
	s.changed()
	return ep, nil
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.cfg.Endpoints.DeleteEndpoint(r.Context(), id); err != nil {
		s.fail(w, "delete endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	if s.cfg.Deliverer != nil {
		if err := s.cfg.Deliverer.Forget(r.Context(), id); err != nil {
			s.cfg.Logger.Warn("admin API: forget deleted endpoint", "endpoint", id, "err", err)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// RotateSecretJSON is the optional body of POST /v1/endpoints/{id}/rotate-secret.
type RotateSecretJSON struct {
	Secret string `json:"secret"`
}

func (s *Server) rotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body RotateSecretJSON
	if r.ContentLength != 0 && !decodeBody(w, r, &body) {
		return
	}
	ep, err := s.rotateSecret(r.Context(), id, body.Secret)
	if err != nil {
		s.fail(w, "rotate endpoint secret", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	out := EndpointJSONOf(ep)
	out.Secret = ep.Secret
	writeJSON(w, http.StatusOK, out)
}

// rotateSecret makes secret (a new one when empty) the endpoint's, the
// old one signing for SecretGrace more, for the API and the console. The
// endpoint returned holds the new secret: show it once.
func (s *Server) rotateSecret(ctx context.Context, id, secret string) (*ordersync.Endpoint, error) {
	if secret == "" {
		var err error
		if secret, err = delivery.NewSecret(); err != nil {
			return nil, err
		}
	} else if err := delivery.ValidateSecret(secret); err != nil {
		return nil, err
	}
	ep, err := s.cfg.Endpoints.RotateEndpointSecret(ctx, id, secret, s.cfg.SecretGrace)
	if err != nil {
		return nil, err
	}
	s.changed()
	return ep, nil
}

func (s *Server) testEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rep, err := s.cfg.Deliverer.Ping(r.Context(), id)
	if err != nil {
		s.fail(w, "test endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// ReplayJSON is the body of POST /v1/endpoints/{id}/replay.
type ReplayJSON struct {
	Since string `json:"since"`
}

func (s *Server) replayEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body ReplayJSON
	if !decodeBody(w, r, &body) {
		return
	}
	since, err := time.Parse(time.RFC3339, body.Since)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "invalid since", map[string][]string{"since": {"must be an RFC 3339 time"}})
		return
	}
	n, err := s.cfg.Deliverer.Replay(r.Context(), id, since)
	if err != nil {
		s.fail(w, "replay to endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"queued": n})
}

// DeliveryDeadLetterJSON is a delivery dead letter as the API shows it.
type DeliveryDeadLetterJSON struct {
	ID          int64      `json:"id"`
	EndpointID  string     `json:"endpointId"`
	Event       string     `json:"event"`
	WebhookID   string     `json:"webhookId"`
	Account     string     `json:"account"`
	OrderCode   string     `json:"orderCode"`
	Attempts    int        `json:"attempts"`
	LastStatus  int        `json:"lastStatus"`
	LastBody    string     `json:"lastBody,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	ReplayedAt  *time.Time `json:"replayedAt,omitempty"`
	ReplayCount int        `json:"replayCount"`
}

func deliveryDeadLetterJSONOf(dl *ordersync.DeliveryDeadLetter) DeliveryDeadLetterJSON {
	return DeliveryDeadLetterJSON{ID: dl.ID, EndpointID: dl.EndpointID, Event: string(dl.Event), WebhookID: dl.WebhookID,
		Account: dl.Account, OrderCode: dl.OrderCode, Attempts: dl.Attempts, LastStatus: dl.LastStatus, LastBody: dl.LastBody,
		LastError: dl.LastError, CreatedAt: dl.CreatedAt, ReplayedAt: dl.ReplayedAt, ReplayCount: dl.ReplayCount}
}

func (s *Server) listDeliveryDeadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ordersync.DeliveryDeadLetterFilter{EndpointID: q.Get("endpoint"), IncludeReplayed: q.Get("include_replayed") == "true"}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeProblem(w, http.StatusBadRequest, "invalid limit", map[string][]string{"limit": {"must be a positive whole number"}})
			return
		}
		f.Limit = n
	}
	dls, err := s.cfg.DeliveryDeadLetters.ListDeliveryDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, "list delivery dead letters", err, "")
		return
	}
	out := make([]DeliveryDeadLetterJSON, len(dls))
	for i, dl := range dls {
		out[i] = deliveryDeadLetterJSONOf(dl)
	}
	writeJSON(w, http.StatusOK, map[string]any{"deadLetters": out, "count": len(out)})
}

func (s *Server) replayDeliveryDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := s.deadLetterID(w, r)
	if !ok {
		return
	}
	rep, err := s.cfg.Deliverer.ReplayDeadLetter(r.Context(), id)
	if err != nil {
		s.fail(w, "replay delivery dead letter", err, fmt.Sprintf("no delivery dead letter %d", id))
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// maxFailedReplay is the most failed deliveries one request sends again:
// each is one attempt of up to the delivery timeout, in turn, and the
// request must end while its caller still waits. The answer says how many
// remain.
const maxFailedReplay = 100

// failedReplayBudget is how long one request starts sends for: with the
// delivery timeout after it, the answer comes well within the admin
// listener's write timeout even from an endpoint that never answers.
const failedReplayBudget = 45 * time.Second

// maxFailedList is the most failed deliveries one read lists: the store's
// cap on a list.
const maxFailedList = 1000

// failedDeliveries is an endpoint and its failed deliveries: its delivery
// dead letters not replayed, newest first, at most limit, and how many
// there are in all.
func (s *Server) failedDeliveries(ctx context.Context, endpointID string, limit int) (*ordersync.Endpoint, []*ordersync.DeliveryDeadLetter, int, error) {
	ep, err := s.cfg.Endpoints.FindEndpoint(ctx, endpointID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("find endpoint %s: %w", endpointID, err)
	}
	dls, err := s.cfg.DeliveryDeadLetters.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID, Limit: limit})
	if err != nil {
		return nil, nil, 0, err
	}
	pending, err := s.cfg.DeliveryDeadLetters.PendingDeliveryDeadLetters(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	return ep, dls, pending[ep.ID], nil
}

// FailedReplay is what a replay of failed deliveries did. Each was sent
// once, now, with its webhook-id and body: Delivered are those the
// endpoint answered 2xx (no longer failed), FailedAgain those it did not
// (still failed, listed with their new answer), Skipped those named that
// were no longer failed (delivered meanwhile, or another endpoint's), which
// were not sent. Remaining counts the endpoint's failed deliveries after.
type FailedReplay struct {
	Sent        int     `json:"sent"`
	Delivered   []int64 `json:"delivered"`
	FailedAgain []int64 `json:"failedAgain"`
	Skipped     []int64 `json:"skipped"`
	Remaining   int     `json:"remaining"`
}

// replayFailed sends the endpoint's failed deliveries named by ids (the
// first maxFailedReplay of all of them when all) again, once each. Only
// letters not replayed are sent, so an event the endpoint already took is
// never sent again by it, and repeating a request sends nothing twice.
func (s *Server) replayFailed(ctx context.Context, endpointID string, ids []int64, all bool) (FailedReplay, error) {
	out := FailedReplay{Delivered: []int64{}, FailedAgain: []int64{}, Skipped: []int64{}}
	limit := maxFailedList
	if all {
		limit = maxFailedReplay
	}
	ep, dls, _, err := s.failedDeliveries(ctx, endpointID, limit)
	if err != nil {
		return out, err
	}
	if ep.Disabled {
		return out, fmt.Errorf("replay to endpoint %s: %w", ep.ID, ordersync.ErrEndpointDisabled)
	}
	chosen := dls
	if !all {
		pending := make(map[int64]*ordersync.DeliveryDeadLetter, len(dls))
		for _, dl := range dls {
			pending[dl.ID] = dl
		}
		chosen = nil
		for _, id := range ids {
			if dl, ok := pending[id]; ok {
				chosen = append(chosen, dl)
				delete(pending, id)
				continue
			}
			out.Skipped = append(out.Skipped, id)
		}
	}
	start := s.cfg.Clock()
	for _, dl := range chosen {
		if s.cfg.Clock().Sub(start) >= failedReplayBudget {
			break // the rest stay failed, counted in Remaining
		}
		rep, err := s.cfg.Deliverer.ReplayDeadLetter(ctx, dl.ID)
		if err != nil {
			return out, err
		}
		out.Sent++
		if rep.Delivered {
			out.Delivered = append(out.Delivered, dl.ID)
		} else {
			out.FailedAgain = append(out.FailedAgain, dl.ID)
		}
	}
	pending, err := s.cfg.DeliveryDeadLetters.PendingDeliveryDeadLetters(ctx)
	if err != nil {
		return out, err
	}
	out.Remaining = pending[ep.ID]
	return out, nil
}

func (s *Server) listFailedDeliveries(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_, dls, total, err := s.failedDeliveries(r.Context(), id, maxFailedList)
	if err != nil {
		s.fail(w, "list failed deliveries", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	out := make([]DeliveryDeadLetterJSON, len(dls))
	for i, dl := range dls {
		out[i] = deliveryDeadLetterJSONOf(dl)
	}
	writeJSON(w, http.StatusOK, map[string]any{"failedDeliveries": out, "count": len(out), "total": total})
}

// ReplayFailedJSON is the body of POST
// /v1/endpoints/{id}/failed-deliveries/replay: the dead letter ids, or all.
type ReplayFailedJSON struct {
	IDs []int64 `json:"ids"`
	All bool    `json:"all"`
}

func (s *Server) replayFailedDeliveries(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body ReplayFailedJSON
	if !decodeBody(w, r, &body) {
		return
	}
	if body.All == (len(body.IDs) > 0) {
		writeProblem(w, http.StatusBadRequest, "invalid replay", map[string][]string{"ids": {"name the failed deliveries to replay, or set all, not both"}})
		return
	}
	if len(body.IDs) > maxFailedReplay {
		writeProblem(w, http.StatusBadRequest, "invalid replay", map[string][]string{"ids": {fmt.Sprintf("at most %d at a time", maxFailedReplay)}})
		return
	}
	res, err := s.replayFailed(r.Context(), id, body.IDs, body.All)
	if err != nil {
		s.fail(w, "replay failed deliveries", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	noteObject(r, fmt.Sprintf("endpoint %s: %d sent, %d delivered, %d failed again", id, res.Sent, len(res.Delivered), len(res.FailedAgain)))
	writeJSON(w, http.StatusOK, res)
}
