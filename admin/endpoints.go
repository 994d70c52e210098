package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/delivery"
)

// routeEndpoints adds the endpoint routes: managing the HTTP endpoints
// that receive order events, and their delivery dead letters.
func (s *Server) routeEndpoints() {
	// Deliveries run where the worker role does; testing and replaying
	// need them, managing endpoints needs only the database.
	eps, dlv := s.cfg.Endpoints != nil, s.cfg.Deliverer != nil
	const endpoints, deliveries = "endpoints", "deliveries (the worker role)"
	s.mux.HandleFunc("POST /v1/endpoints", api.When(eps, endpoints, s.createEndpoint))
	s.mux.HandleFunc("GET /v1/endpoints", api.When(eps, endpoints, s.listEndpoints))
	s.mux.HandleFunc("GET /v1/endpoints/{id}", api.When(eps, endpoints, s.showEndpoint))
	s.mux.HandleFunc("PATCH /v1/endpoints/{id}", api.When(eps, endpoints, s.patchEndpoint))
	s.mux.HandleFunc("DELETE /v1/endpoints/{id}", api.When(eps, endpoints, s.deleteEndpoint))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/rotate-secret", api.When(eps, endpoints, s.rotateEndpointSecret))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/test", api.When(eps && dlv, deliveries, s.testEndpoint))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/replay", api.When(eps && dlv, deliveries, s.replayEndpoint))
	s.mux.HandleFunc("GET /v1/delivery-dead-letters", api.When(s.cfg.DeliveryDeadLetters != nil, "delivery dead letters", s.listDeliveryDeadLetters))
	s.mux.HandleFunc("POST /v1/delivery-dead-letters/{id}/replay", api.When(dlv, deliveries, s.replayDeliveryDeadLetter))
	failed := eps && s.cfg.DeliveryDeadLetters != nil
	s.mux.HandleFunc("GET /v1/endpoints/{id}/failed-deliveries", api.When(failed, "delivery dead letters", s.listFailedDeliveries))
	s.mux.HandleFunc("POST /v1/endpoints/{id}/failed-deliveries/replay", api.When(failed && dlv, deliveries, s.replayFailedDeliveries))
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
	var body api.EndpointParamsJSON
	if !api.DecodeBody(w, r, &body) {
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
	out := api.EndpointJSONOf(ep)
	out.Secret = ep.Secret
	w.Header().Set("Location", "/v1/endpoints/"+ep.ID)
	api.WriteJSON(w, http.StatusCreated, out)
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	eps, err := s.cfg.Endpoints.ListEndpoints(r.Context())
	if err != nil {
		s.fail(w, "list endpoints", err, "")
		return
	}
	out := make([]api.EndpointJSON, len(eps))
	for i, ep := range eps {
		out[i] = api.EndpointJSONOf(ep)
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"endpoints": out, "count": len(out)})
}

func (s *Server) showEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ep, err := s.cfg.Endpoints.FindEndpoint(r.Context(), id)
	if err != nil {
		s.fail(w, "find endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	api.WriteJSON(w, http.StatusOK, api.EndpointJSONOf(ep))
}

func (s *Server) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body api.EndpointUpdateJSON
	if !api.DecodeBody(w, r, &body) {
		return
	}
	ep, err := s.updateEndpoint(r.Context(), id, ordersync.EndpointUpdate{
		URL: body.URL, Events: hookEvents(body.Events), Description: body.Description, Disabled: body.Disabled, RatePerSecond: body.RatePerSecond,
	})
	if err != nil {
		s.fail(w, "update endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	api.WriteJSON(w, http.StatusOK, api.EndpointJSONOf(ep))
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

func (s *Server) rotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body api.RotateSecretJSON
	if r.ContentLength != 0 && !api.DecodeBody(w, r, &body) {
		return
	}
	ep, err := s.rotateSecret(r.Context(), id, body.Secret)
	if err != nil {
		s.fail(w, "rotate endpoint secret", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	out := api.EndpointJSONOf(ep)
	out.Secret = ep.Secret
	api.WriteJSON(w, http.StatusOK, out)
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
	api.WriteJSON(w, http.StatusOK, rep)
}

func (s *Server) replayEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body api.ReplayJSON
	if !api.DecodeBody(w, r, &body) {
		return
	}
	since, err := time.Parse(time.RFC3339, body.Since)
	if err != nil {
		api.WriteProblem(w, http.StatusBadRequest, "invalid since", map[string][]string{"since": {"must be an RFC 3339 time"}})
		return
	}
	n, err := s.cfg.Deliverer.Replay(r.Context(), id, since)
	if err != nil {
		s.fail(w, "replay to endpoint", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	api.WriteJSON(w, http.StatusAccepted, map[string]int{"queued": n})
}
