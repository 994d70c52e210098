package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
)

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

func DeliveryDeadLetterJSONOf(dl *ordersync.DeliveryDeadLetter) DeliveryDeadLetterJSON {
	return DeliveryDeadLetterJSON{ID: dl.ID, EndpointID: dl.EndpointID, Event: string(dl.Event), WebhookID: dl.WebhookID,
		Account: dl.Account, OrderCode: dl.OrderCode, Attempts: dl.Attempts, LastStatus: dl.LastStatus, LastBody: dl.LastBody,
		LastError: dl.LastError, CreatedAt: dl.CreatedAt, ReplayedAt: dl.ReplayedAt, ReplayCount: dl.ReplayCount}
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

// ReplayFailedJSON is the body of POST
// /v1/endpoints/{id}/failed-deliveries/replay: the dead letter ids, or all.
type ReplayFailedJSON struct {
	IDs []int64 `json:"ids"`
	All bool    `json:"all"`
}

func (h *Handlers) listDeliveryDeadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ordersync.DeliveryDeadLetterFilter{EndpointID: q.Get("endpoint"), IncludeReplayed: q.Get("include_replayed") == "true"}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			WriteProblem(w, http.StatusBadRequest, "invalid limit", map[string][]string{"limit": {"must be a positive whole number"}})
			return
		}
		f.Limit = n
	}
	dls, err := h.deps.DeliveryDeadLetters.ListDeliveryDeadLetters(r.Context(), f)
	if err != nil {
		h.office.Fail(w, "list delivery dead letters", err, "")
		return
	}
	out := make([]DeliveryDeadLetterJSON, len(dls))
	for i, dl := range dls {
		out[i] = DeliveryDeadLetterJSONOf(dl)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"deadLetters": out, "count": len(out)})
}

func (h *Handlers) replayDeliveryDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := DeadLetterID(w, r)
	if !ok {
		return
	}
	rep, err := h.deps.Deliverer.ReplayDeadLetter(r.Context(), id)
	if err != nil {
		h.office.Fail(w, "replay delivery dead letter", err, fmt.Sprintf("no delivery dead letter %d", id))
		return
	}
	WriteJSON(w, http.StatusOK, rep)
}

// MaxFailedReplay is the most failed deliveries one request sends again:
// each is one attempt of up to the delivery timeout, in turn, and the
// request must end while its caller still waits. The answer says how many
// remain.
const MaxFailedReplay = 100

// failedReplayBudget is how long one request starts sends for: with the
// delivery timeout after it, the answer comes well within the admin
// listener's write timeout even from an endpoint that never answers.
const failedReplayBudget = 45 * time.Second

// MaxFailedList is the most failed deliveries one read lists: the store's
// cap on a list.
const MaxFailedList = 1000

// FailedDeliveries is an endpoint and its failed deliveries: its delivery
// dead letters not replayed, newest first, at most limit, and how many
// there are in all.
func (h *Handlers) FailedDeliveries(ctx context.Context, endpointID string, limit int) (*ordersync.Endpoint, []*ordersync.DeliveryDeadLetter, int, error) {
	ep, err := h.deps.Endpoints.FindEndpoint(ctx, endpointID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("find endpoint %s: %w", endpointID, err)
	}
	dls, err := h.deps.DeliveryDeadLetters.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID, Limit: limit})
	if err != nil {
		return nil, nil, 0, err
	}
	pending, err := h.deps.DeliveryDeadLetters.PendingDeliveryDeadLetters(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	return ep, dls, pending[ep.ID], nil
}

// ReplayFailed sends the endpoint's failed deliveries named by ids (the
// first MaxFailedReplay of all of them when all) again, once each. Only
// letters not replayed are sent, so an event the endpoint already took is
// never sent again by it, and repeating a request sends nothing twice.
func (h *Handlers) ReplayFailed(ctx context.Context, endpointID string, ids []int64, all bool) (FailedReplay, error) {
	out := FailedReplay{Delivered: []int64{}, FailedAgain: []int64{}, Skipped: []int64{}}
	limit := MaxFailedList
	if all {
		limit = MaxFailedReplay
	}
	ep, dls, _, err := h.FailedDeliveries(ctx, endpointID, limit)
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
	start := h.deps.Clock()
	for _, dl := range chosen {
		if h.deps.Clock().Sub(start) >= failedReplayBudget {
			break // the rest stay failed, counted in Remaining
		}
		rep, err := h.deps.Deliverer.ReplayDeadLetter(ctx, dl.ID)
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
	pending, err := h.deps.DeliveryDeadLetters.PendingDeliveryDeadLetters(ctx)
	if err != nil {
		return out, err
	}
	out.Remaining = pending[ep.ID]
	return out, nil
}

func (h *Handlers) listFailedDeliveries(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_, dls, total, err := h.FailedDeliveries(r.Context(), id, MaxFailedList)
	if err != nil {
		h.office.Fail(w, "list failed deliveries", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	out := make([]DeliveryDeadLetterJSON, len(dls))
	for i, dl := range dls {
		out[i] = DeliveryDeadLetterJSONOf(dl)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"failedDeliveries": out, "count": len(out), "total": total})
}

func (h *Handlers) replayFailedDeliveries(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body ReplayFailedJSON
	if !DecodeBody(w, r, &body) {
		return
	}
	if body.All == (len(body.IDs) > 0) {
		WriteProblem(w, http.StatusBadRequest, "invalid replay", map[string][]string{"ids": {"name the failed deliveries to replay, or set all, not both"}})
		return
	}
	if len(body.IDs) > MaxFailedReplay {
		WriteProblem(w, http.StatusBadRequest, "invalid replay", map[string][]string{"ids": {fmt.Sprintf("at most %d at a time", MaxFailedReplay)}})
		return
	}
	res, err := h.ReplayFailed(r.Context(), id, body.IDs, body.All)
	if err != nil {
		h.office.Fail(w, "replay failed deliveries", err, fmt.Sprintf("no endpoint %s", id))
		return
	}
	h.office.Note(r, fmt.Sprintf("endpoint %s: %d sent, %d delivered, %d failed again", id, res.Sent, len(res.Delivered), len(res.FailedAgain)))
	WriteJSON(w, http.StatusOK, res)
}
