package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// DeadLetterJSON is a dead letter as the API writes it.
type DeadLetterJSON struct {
	ID             int64             `json:"id"`
	MsgID          string            `json:"msgId"`
	Account        string            `json:"account"`
	Reason         string            `json:"reason"`
	Attempts       int               `json:"attempts"`
	LastError      string            `json:"lastError"`
	OrderID        ordersync.ID      `json:"orderId,omitempty"` // a number when all digits, as in the order
	OrderReference string            `json:"orderReference,omitempty"`
	OrderCode      string            `json:"orderCode,omitempty"`
	Body           json.RawMessage   `json:"body,omitempty"`
	BodyText       string            `json:"bodyText,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
	ReplayedAt     *time.Time        `json:"replayedAt,omitempty"`
	ReplayCount    int               `json:"replayCount"`
}

// DeadLetterJSONOf converts a dead letter; a body that is not JSON is given
// as text.
func DeadLetterJSONOf(dl *ordersync.DeadLetter) DeadLetterJSON {
	out := DeadLetterJSON{ID: dl.ID, MsgID: dl.MsgID, Account: dl.Account, Reason: string(dl.Reason),
		Attempts: dl.Attempts, LastError: dl.LastError, OrderID: dl.OrderID, OrderReference: dl.OrderReference,
		OrderCode: dl.OrderCode, Headers: dl.Headers, CreatedAt: dl.CreatedAt, ReplayedAt: dl.ReplayedAt,
		ReplayCount: dl.ReplayCount}
	if json.Valid(dl.Body) {
		out.Body = dl.Body
	} else {
		out.BodyText = string(dl.Body)
	}
	return out
}

func deadLetterFilter(w http.ResponseWriter, r *http.Request) (ordersync.DeadLetterFilter, bool) {
	f, fields := ParseDeadLetterQuery(r.URL.Query())
	if fields != nil {
		WriteProblem(w, http.StatusBadRequest, "invalid query", fields)
		return f, false
	}
	return f, true
}

// ParseDeadLetterQuery reads a dead-letter filter from a query (account,
// "" or AllStores for every account, also those the deployment no longer
// serves, whose letters are exactly what needs seeing; reason, replayed=true, limit, and before: the id the page starts
// below), as the API and the console take it; the fields it cannot read
// are named with why.
func ParseDeadLetterQuery(q url.Values) (ordersync.DeadLetterFilter, map[string][]string) {
	f := ordersync.DeadLetterFilter{Account: q.Get("account"), IncludeReplayed: q.Get("replayed") == "true"}
	if f.Account == AllStores {
		f.Account = ""
	}
	fields := map[string][]string{}
	if v := q.Get("reason"); v != "" {
		var err error
		if f.Reason, err = ordersync.ParseDeadLetterReason(v); err != nil {
			fields["reason"] = []string{err.Error()}
		}
	}
	for _, p := range []struct {
		name string
		set  func(int64)
	}{{"limit", func(n int64) { f.Limit = int(n) }}, {"before", func(n int64) { f.BeforeID = n }}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				fields[p.name] = []string{"must be a whole number ≥ 0"}
				continue
			}
			p.set(n)
		}
	}
	for _, p := range []struct {
		name string
		set  *time.Time
	}{{"requeued_from", &f.RequeuedFrom}, {"requeued_to", &f.RequeuedTo}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				fields[p.name] = []string{"must be an RFC 3339 time, as 2026-11-25T14:00:00Z"}
				continue
			}
			*p.set = t
		}
	}
	if !f.RequeuedTo.IsZero() && f.RequeuedFrom.IsZero() {
		fields["requeued_to"] = []string{"needs requeued_from"}
	}
	if len(fields) == 0 {
		return f, nil
	}
	return f, fields
}

func (h *Handlers) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	f, ok := deadLetterFilter(w, r)
	if !ok {
		return
	}
	dls, err := h.deps.DeadLetters.ListDeadLetters(r.Context(), f)
	if err != nil {
		h.office.Fail(w, "list dead letters", err, "")
		return
	}
	out := make([]DeadLetterJSON, 0, len(dls))
	for _, dl := range dls {
		out = append(out, DeadLetterJSONOf(dl))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"deadLetters": out, "count": len(out)})
}

// DeadLetterID is the dead letter id of the request's path, answering 400
// when it is not one.
func DeadLetterID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		WriteProblem(w, http.StatusBadRequest, "invalid dead letter id", map[string][]string{"id": {"must be a positive whole number"}})
		return 0, false
	}
	return id, true
}

// FindDeadLetter reads the dead letter the path's id names, answering the
// request itself (400 or 404) when it cannot.
func (h *Handlers) FindDeadLetter(w http.ResponseWriter, r *http.Request) (*ordersync.DeadLetter, bool) {
	id, ok := DeadLetterID(w, r)
	if !ok {
		return nil, false
	}
	dl, err := h.deps.DeadLetters.FindDeadLetter(r.Context(), id)
	if err != nil {
		h.office.Fail(w, "find dead letter", err, fmt.Sprintf("no dead letter %d", id))
		return nil, false
	}
	return dl, true
}

func (h *Handlers) showDeadLetter(w http.ResponseWriter, r *http.Request) {
	dl, ok := h.FindDeadLetter(w, r)
	if !ok {
		return
	}
	WriteJSON(w, http.StatusOK, DeadLetterJSONOf(dl))
}

func (h *Handlers) replayDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := DeadLetterID(w, r)
	if !ok {
		return
	}
	if err := h.deps.Replayer.ReplayDeadLetter(r.Context(), id); err != nil {
		h.office.Fail(w, "replay dead letter", err, fmt.Sprintf("no dead letter %d", id))
		return
	}
	WriteJSON(w, http.StatusOK, map[string]int{"replayed": 1})
}

func (h *Handlers) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	f, ok := deadLetterFilter(w, r)
	if !ok {
		return
	}
	h.office.Note(r, strings.TrimSpace("dead letters "+r.URL.RawQuery))
	n, err := h.deps.Replayer.ReplayDeadLetters(r.Context(), f)
	if err != nil {
		h.office.Fail(w, "replay dead letters", err, "")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]int{"replayed": n})
}
