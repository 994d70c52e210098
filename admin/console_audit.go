package admin

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/ordersync/ordersync"
)

// The console's Audit page: the trail GET /v1/audit serves, newest first,
// filtered by who (the token's name) and what (the action), in keyset
// pages, all in the URL.

// routeConsoleAudit adds the Audit page.
func (s *Server) routeConsoleAudit() {
	s.mux.HandleFunc("GET /console/audit", when(s.cfg.Audit != nil, "the audit trail", s.auditPage))
}

// AuditView is the Audit page.
type AuditView struct {
	Actor, Action string
	Errors        map[string][]string
	Actions       []string
	Rows          []AuditRow
	NextURL       string
	Zone          ZoneSwitch
}

// AuditRow is one record as the Audit page shows it.
type AuditRow struct {
	At                                        Moment
	Actor, Role, Via, Action, Object, Outcome string
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	zoneName := s.storeZone(r.Context(), s.account(r))
	loc, mode := s.zoneOf(r, zoneName)
	view := &AuditView{Actor: q.Get("actor"), Action: q.Get("action"), Actions: auditActionNames(),
		Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.RequestURI()}}
	f := ordersync.AuditFilter{Actor: view.Actor, Action: view.Action, Limit: defaultConsoleLimit}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			view.Errors = map[string][]string{"cursor": {"must be the cursor of a previous page"}}
			s.page(w, r, http.StatusBadRequest, "audit.html", &Page{Title: "Audit", Data: view})
			return
		}
		f.Before = n
	}
	page, err := s.cfg.Audit.ListAudit(r.Context(), f)
	if err != nil {
		s.fail(w, "list audit", err, "")
		return
	}
	for _, rec := range page.Records {
		view.Rows = append(view.Rows, AuditRow{At: momentOf(rec.At, loc), Actor: rec.Actor, Role: string(rec.Role),
			Via: string(rec.Via), Action: rec.Action, Object: rec.Object, Outcome: rec.Outcome})
	}
	if page.Next > 0 {
		next := url.Values{"cursor": {strconv.FormatInt(page.Next, 10)}}
		if view.Actor != "" {
			next.Set("actor", view.Actor)
		}
		if view.Action != "" {
			next.Set("action", view.Action)
		}
		view.NextURL = "/console/audit?" + next.Encode()
	}
	s.page(w, r, http.StatusOK, "audit.html", &Page{Title: "Audit", Data: view})
}

// auditActionNames are the actions the trail records, for the filter's
// suggestions.
func auditActionNames() []string {
	var names []string
	for _, a := range actions {
		if !slices.Contains(names, a.name) {
			names = append(names, a.name)
		}
	}
	slices.Sort(names)
	return names
}
