package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
)

// AuditJSON is one record of the audit trail as the API writes it.
type AuditJSON struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Role    string    `json:"role,omitempty"`
	Via     string    `json:"via"`
	Action  string    `json:"action"`
	Object  string    `json:"object,omitempty"`
	Outcome string    `json:"outcome"`
}

// AuditList is the body of GET /v1/audit. NextCursor, when not empty, is
// the cursor of the next page.
type AuditList struct {
	Records    []AuditJSON `json:"records"`
	Count      int         `json:"count"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// listAudit answers GET /v1/audit?actor=&action=&since=&until=&limit=&cursor=:
// the trail newest first, in keyset pages. Viewers may read it.
func (h *Handlers) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ordersync.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action")}
	now := h.deps.Clock()
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(p.name); v != "" {
			t, err := ordersync.ParseSince(v, now)
			if err != nil {
				WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{p.name: {err.Error()}})
				return
			}
			*p.dst = t
		}
	}
	if !QueryCount(w, q, "limit", &f.Limit) {
		return
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{"cursor": {"must be the nextCursor of a previous page"}})
			return
		}
		f.Before = n
	}
	page, err := h.deps.Audit.ListAudit(r.Context(), f)
	if err != nil {
		h.office.Fail(w, "list audit", err, "")
		return
	}
	out := AuditList{Records: make([]AuditJSON, len(page.Records)), Count: len(page.Records)}
	for i, rec := range page.Records {
		out.Records[i] = AuditJSON{ID: rec.ID, At: rec.At, Actor: rec.Actor, Role: string(rec.Role), Via: string(rec.Via),
			Action: rec.Action, Object: rec.Object, Outcome: rec.Outcome}
	}
	if page.Next > 0 {
		out.NextCursor = strconv.FormatInt(page.Next, 10)
	}
	WriteJSON(w, http.StatusOK, out)
}
