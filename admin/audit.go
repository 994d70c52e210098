package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// auditTimeout bounds writing one audit record or ending a session after
// the request's own context may have ended.
const auditTimeout = 5 * time.Second

// listAudit answers GET /v1/audit?actor=&action=&since=&until=&limit=&cursor=:
// the trail newest first, in keyset pages. Viewers may read it.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ordersync.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action")}
	now := s.cfg.Clock()
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(p.name); v != "" {
			t, err := ordersync.ParseSince(v, now)
			if err != nil {
				api.WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{p.name: {err.Error()}})
				return
			}
			*p.dst = t
		}
	}
	if !api.QueryCount(w, q, "limit", &f.Limit) {
		return
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			api.WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{"cursor": {"must be the nextCursor of a previous page"}})
			return
		}
		f.Before = n
	}
	page, err := s.cfg.Audit.ListAudit(r.Context(), f)
	if err != nil {
		s.fail(w, "list audit", err, "")
		return
	}
	out := api.AuditList{Records: make([]api.AuditJSON, len(page.Records)), Count: len(page.Records)}
	for i, rec := range page.Records {
		out.Records[i] = api.AuditJSON{ID: rec.ID, At: rec.At, Actor: rec.Actor, Role: string(rec.Role), Via: string(rec.Via),
			Action: rec.Action, Object: rec.Object, Outcome: rec.Outcome}
	}
	if page.Next > 0 {
		out.NextCursor = strconv.FormatInt(page.Next, 10)
	}
	api.WriteJSON(w, http.StatusOK, out)
}
