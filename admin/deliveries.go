package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

func (s *Server) listDeliveryDeadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ordersync.DeliveryDeadLetterFilter{EndpointID: q.Get("endpoint"), IncludeReplayed: q.Get("include_replayed") == "true"}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			api.WriteProblem(w, http.StatusBadRequest, "invalid limit", map[string][]string{"limit": {"must be a positive whole number"}})
			return
		}
		f.Limit = n
	}
	dls, err := s.cfg.DeliveryDeadLetters.ListDeliveryDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, "list delivery dead letters", err, "")
		return
	}
	out := make([]api.DeliveryDeadLetterJSON, len(dls))
	for i, dl := range dls {
		out[i] = api.DeliveryDeadLetterJSONOf(dl)
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"deadLetters": out, "count": len(out)})
}

func (s *Server) replayDeliveryDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := api.DeadLetterID(w, r)
	if !ok {
		return
	}
	rep, err := s.cfg.Deliverer.ReplayDeadLetter(r.Context(), id)
	if err != nil {
		s.fail(w, "replay delivery dead letter", err, fmt.Sprintf("no delivery dead letter %d", id))
		return
	}
	api.WriteJSON(w, http.StatusOK, rep)
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

// replayFailed sends the endpoint's failed deliveries named by ids (the
// first maxFailedReplay of all of them when all) again, once each. Only
// letters not replayed are sent, so an event the endpoint already took is
// never sent again by it, and repeating a request sends nothing twice.
func (s *Server) replayFailed(ctx context.Context, endpointID string, ids []int64, all bool) (api.FailedReplay, error) {
	out := api.FailedReplay{Delivered: []int64{}, FailedAgain: []int64{}, Skipped: []int64{}}
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
	out := make([]api.DeliveryDeadLetterJSON, len(dls))
	for i, dl := range dls {
		out[i] = api.DeliveryDeadLetterJSONOf(dl)
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"failedDeliveries": out, "count": len(out), "total": total})
}

func (s *Server) replayFailedDeliveries(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body api.ReplayFailedJSON
	if !api.DecodeBody(w, r, &body) {
		return
	}
	if body.All == (len(body.IDs) > 0) {
		api.WriteProblem(w, http.StatusBadRequest, "invalid replay", map[string][]string{"ids": {"name the failed deliveries to replay, or set all, not both"}})
		return
	}
	if len(body.IDs) > maxFailedReplay {
		api.WriteProblem(w, http.StatusBadRequest, "invalid replay", map[string][]string{"ids": {fmt.Sprintf("at most %d at a time", maxFailedReplay)}})
		return
	}
	res, err := s.replayFailed(r.Context(), id, body.IDs, body.All)
	if err != nil {
		s.fail(w, "replay failed deliveries", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	noteObject(r, fmt.Sprintf("endpoint %s: %d sent, %d delivered, %d failed again", id, res.Sent, len(res.Delivered), len(res.FailedAgain)))
	api.WriteJSON(w, http.StatusOK, res)
}
