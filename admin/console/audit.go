package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console's Audit page: the trail GET /v1/audit serves, newest first,
// filtered by who (the token's name) and what (the action), in keyset
// pages, all in the URL.

// routeAudit adds the Audit page.
func (s *Console) routeAudit(mux Mux) {
	mux.HandleFunc("GET /console/audit", api.When(s.cfg.Audit != nil, "the audit trail", s.auditPage))
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

// AuditRow is one record as the Audit page shows it: What is the action
// in words, Link the page of its object (an order, a dead letter, the
// endpoints), when it has one.
type AuditRow struct {
	At                                        Moment
	Actor, Role, Via, Action, Object, Outcome string
	What, Link                                string
}

// actionWords are the trail's actions in words, for the Audit page and
// for a refusal's page.
var actionWords = map[string]string{
	"order.track":                 "Re-sync (track) an order",
	"payment-link.create":         "Create a payment link",
	"dead-letter.replay":          "Replay a dead letter",
	"dead-letters.replay":         "Replay every dead letter a filter matches",
	"endpoint.create":             "Create an endpoint",
	"endpoint.update":             "Change an endpoint",
	"endpoint.delete":             "Delete an endpoint",
	"endpoint.enable":             "Enable an endpoint",
	"endpoint.disable":            "Disable an endpoint",
	"endpoint.rotate-secret":      "Rotate an endpoint's secret",
	"endpoint.test":               "Send a test event to an endpoint",
	"endpoint.replay":             "Replay events to an endpoint",
	"delivery-dead-letter.replay": "Replay a failed delivery",
	"console.sign-in":             "Sign in to the console",
	"console.sign-out":            "Sign out of the console",
	"export.orders":               "Export orders",
	"export.order-lines":          "Export line items",
	"export.status-changes":       "Export status changes",
}

// ActionInWords is the action in words, or its name when it has none.
func ActionInWords(action string) string {
	if w, ok := actionWords[action]; ok {
		return w
	}
	return action
}

// objectLink is the console page of an audit record's object ("order
// CODE", "dead-letter 12", "endpoint ID"), "" when it has none.
func (s *Console) objectLink(object string) string {
	kind, id, ok := strings.Cut(object, " ")
	if !ok || id == "" || strings.Contains(id, " ") {
		return ""
	}
	switch kind {
	case "order":
		return orderLink(s.cfg.Stores.Default, id)
	case "dead-letter":
		return "/console/dead-letters/" + url.PathEscape(id)
	case "endpoint", "delivery-dead-letter":
		return "/console/endpoints"
	}
	return ""
}

func (s *Console) auditPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	zoneName := s.storeZone(r.Context(), s.cfg.Stores.Account(r))
	loc, mode := s.zoneOf(r, zoneName)
	view := &AuditView{Actor: q.Get("actor"), Action: q.Get("action"), Actions: s.cfg.AuditActions,
		Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.RequestURI()}}
	f := ordersync.AuditFilter{Actor: strings.TrimSpace(view.Actor), Action: strings.TrimSpace(view.Action), Limit: defaultConsoleLimit}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			view.Errors = labelled(map[string][]string{"cursor": {"must be the cursor of a previous page"}})
			s.page(w, r, http.StatusBadRequest, "audit.html", &Page{Title: "Audit", Data: view})
			return
		}
		f.Before = n
	}
	page, err := s.cfg.Audit.ListAudit(r.Context(), f)
	if err != nil {
		s.office.Fail(w, "list audit", err, "")
		return
	}
	for _, rec := range page.Records {
		view.Rows = append(view.Rows, AuditRow{At: momentOf(rec.At, loc), Actor: rec.Actor, Role: string(rec.Role),
			Via: string(rec.Via), Action: rec.Action, Object: rec.Object, Outcome: rec.Outcome,
			What: ActionInWords(rec.Action), Link: s.objectLink(rec.Object)})
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
