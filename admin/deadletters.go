package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

func (s *Server) deadLetterFilter(w http.ResponseWriter, r *http.Request) (ordersync.DeadLetterFilter, bool) {
	f, fields := ParseDeadLetterQuery(r.URL.Query())
	if fields != nil {
		api.WriteProblem(w, http.StatusBadRequest, "invalid query", fields)
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

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	f, ok := s.deadLetterFilter(w, r)
	if !ok {
		return
	}
	dls, err := s.cfg.DeadLetters.ListDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, "list dead letters", err, "")
		return
	}
	out := make([]api.DeadLetterJSON, 0, len(dls))
	for _, dl := range dls {
		out = append(out, api.DeadLetterJSONOf(dl))
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"deadLetters": out, "count": len(out)})
}

func (s *Server) deadLetterID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		api.WriteProblem(w, http.StatusBadRequest, "invalid dead letter id", map[string][]string{"id": {"must be a positive whole number"}})
		return 0, false
	}
	return id, true
}

// findDeadLetter reads the dead letter the path's id names, answering the
// request itself (400 or 404) when it cannot.
func (s *Server) findDeadLetter(w http.ResponseWriter, r *http.Request) (*ordersync.DeadLetter, bool) {
	id, ok := s.deadLetterID(w, r)
	if !ok {
		return nil, false
	}
	dl, err := s.cfg.DeadLetters.FindDeadLetter(r.Context(), id)
	if err != nil {
		s.fail(w, "find dead letter", err, fmt.Sprintf("no dead letter %d", id))
		return nil, false
	}
	return dl, true
}

func (s *Server) showDeadLetter(w http.ResponseWriter, r *http.Request) {
	dl, ok := s.findDeadLetter(w, r)
	if !ok {
		return
	}
	api.WriteJSON(w, http.StatusOK, api.DeadLetterJSONOf(dl))
}

func (s *Server) replayDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := s.deadLetterID(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Replayer.ReplayDeadLetter(r.Context(), id); err != nil {
		s.fail(w, "replay dead letter", err, fmt.Sprintf("no dead letter %d", id))
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]int{"replayed": 1})
}

func (s *Server) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	f, ok := s.deadLetterFilter(w, r)
	if !ok {
		return
	}
	noteObject(r, strings.TrimSpace("dead letters "+r.URL.RawQuery))
	n, err := s.cfg.Replayer.ReplayDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, "replay dead letters", err, "")
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]int{"replayed": n})
}
