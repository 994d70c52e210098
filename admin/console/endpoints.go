package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console's Endpoints page: each HTTP endpoint with its success rate
// and last failure over a period, read from the delivery log in the
// mirror (so every process's deliveries count), and for operators the
// API's endpoint actions through the same functions: enable and disable,
// a test event, a replay since a time, a new secret shown once.

// routeEndpoints adds the Endpoints page and its actions.
func (s *Console) routeEndpoints(mux Mux) {
	eps, dlv := s.cfg.Endpoints != nil, s.cfg.Deliverer != nil
	const endpoints, deliveries = "endpoints", "deliveries (the worker role)"
	mux.HandleFunc("GET /console/endpoints", api.When(eps, endpoints, s.endpointsPage))
	mux.HandleFunc("GET /console/endpoints/{id}/confirm", api.When(eps, endpoints, s.endpointConfirmPage))
	mux.HandleFunc("POST /console/endpoints/{id}/enable", api.When(eps, endpoints, s.consoleEnableEndpoint(true)))
	mux.HandleFunc("POST /console/endpoints/{id}/disable", api.When(eps, endpoints, s.consoleEnableEndpoint(false)))
	mux.HandleFunc("POST /console/endpoints/{id}/rotate-secret", api.When(eps, endpoints, s.consoleRotateSecret))
	mux.HandleFunc("POST /console/endpoints/{id}/test", api.When(eps && dlv, deliveries, s.consoleTestEndpoint))
	mux.HandleFunc("POST /console/endpoints/{id}/replay", api.When(eps && dlv, deliveries, s.consoleReplayEndpoint))
}

// HealthWindow is a period the Endpoints page can judge endpoints by, as
// its URL's window parameter names it.
type HealthWindow struct {
	Param, Label string
	Period       time.Duration
}

// healthWindows are the periods the page offers; the first is the default.
var healthWindows = []HealthWindow{
	{"24h", "24 hours", 24 * time.Hour},
	{"1h", "hour", time.Hour},
	{"7d", "7 days", 7 * 24 * time.Hour},
}

// healthWindowOf reads the window parameter: absent is the default, an
// unknown value an error naming the ones there are.
func healthWindowOf(q url.Values) (HealthWindow, error) {
	v := q.Get("window")
	if v == "" {
		return healthWindows[0], nil
	}
	names := make([]string, len(healthWindows))
	for i, w := range healthWindows {
		if w.Param == v {
			return w, nil
		}
		names[i] = w.Param
	}
	return HealthWindow{}, fmt.Errorf("window %q is not a period the page offers: one of %s", v, strings.Join(names, ", "))
}

// EndpointsView is the Endpoints page.
type EndpointsView struct {
	Rows []EndpointRow
	// Window is the period the rates cover; Windows are those offered;
	// Query carries a chosen one into the action forms' URLs ("" or
	// "?window=7d").
	Window  HealthWindow
	Windows []HealthWindow
	Query   string
	MayAct  bool
	// ListsFailed: the failed deliveries can be listed (the delivery dead
	// letters are at hand).
	ListsFailed bool
	// Secret is an endpoint's new secret, on the answer to its rotation
	// and nowhere else.
	Secret *NewSecret
	Zone   ZoneSwitch
}

// NewSecret is a secret just made.
type NewSecret struct {
	EndpointID, Secret string
	OldUntil           Moment
}

// EndpointRow is one endpoint as the page shows it: never its secrets.
type EndpointRow struct {
	ID, URL, Events, Description, Source string
	Disabled                             bool
	DisabledReason                       string
	// Rate is the share delivered ("—" without deliveries); LastFailure
	// describes the latest delivery that did not go through.
	Rate              string
	Delivered, Failed int
	// FailedDeliveries counts its delivery dead letters not replayed.
	FailedDeliveries    int
	LastFailure         string
	LastFailureAt       Moment
	PreviousSecretUntil Moment
}

func (s *Console) endpointsPage(w http.ResponseWriter, r *http.Request) {
	s.showEndpoints(w, r, http.StatusOK, "", nil)
}

// showEndpoints renders the Endpoints page, with message on top (what an
// action just did) and secret when one was just made.
func (s *Console) showEndpoints(w http.ResponseWriter, r *http.Request, status int, message string, secret *ordersync.Endpoint) {
	ctx := r.Context()
	zoneName := s.storeZone(ctx, s.cfg.Stores.Default)
	loc, mode := s.zoneOf(r, zoneName)
	window, err := healthWindowOf(r.URL.Query())
	if err != nil && r.Method != http.MethodGet {
		// An action's answer: what the action did is the news, and the
		// forms only ever carry a window the page offers.
		window, err = healthWindows[0], nil
	}
	if err != nil {
		view := &EndpointsView{Window: healthWindows[0], Windows: healthWindows,
			Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: "/console/endpoints"}}
		s.page(w, r, http.StatusBadRequest, "endpoints.html", &Page{Title: "Endpoints", Message: "Window: " + err.Error(), Data: view})
		return
	}
	query := ""
	if window != healthWindows[0] {
		query = "?" + url.Values{"window": {window.Param}}.Encode()
	}
	eps, err := s.cfg.Endpoints.ListEndpoints(ctx)
	if err != nil {
		s.office.Fail(w, "list endpoints", err, "")
		return
	}
	now := s.cfg.Clock()
	health, err := s.cfg.Orders.DeliveryHealth(ctx, now.Add(-window.Period))
	if err != nil {
		s.office.Fail(w, "read endpoint health", err, "")
		return
	}
	// The failed deliveries are the letters a person can still fix, not
	// the window's: the same count as the overview's, from the same read.
	var pending map[string]int
	if s.cfg.DeliveryDeadLetters != nil {
		if pending, err = s.cfg.DeliveryDeadLetters.PendingDeliveryDeadLetters(ctx); err != nil {
			s.office.Fail(w, "count failed deliveries", err, "")
			return
		}
	}
	view := &EndpointsView{Window: window, Windows: healthWindows, Query: query, MayAct: s.mayAct(r), ListsFailed: pending != nil,
		Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: "/console/endpoints" + query}}
	for _, ep := range eps {
		h := health[ep.ID]
		row := EndpointRow{ID: ep.ID, URL: ep.URL, Description: ep.Description, Source: string(ep.Source),
			Disabled: ep.Disabled, DisabledReason: ep.DisabledReason, Rate: "—", Delivered: h.Delivered, Failed: h.Failed,
			FailedDeliveries: pending[ep.ID]}
		events := make([]string, len(ep.Events))
		for i, ev := range ep.Events {
			events[i] = string(ev)
		}
		row.Events = strings.Join(events, ", ")
		if rate, ok := h.SuccessRate(); ok {
			row.Rate = fmt.Sprintf("%.1f %%", 100*rate)
		}
		if f := h.LastFailure; f != nil {
			row.LastFailure = fmt.Sprintf("%s of order %s: %s after %d attempt(s), HTTP %d", f.Event, f.OrderCode, f.Outcome, f.Attempts, f.Status)
			if f.Detail != "" {
				row.LastFailure += ": " + f.Detail
			}
			row.LastFailureAt = momentOf(f.At, loc)
		}
		if ep.PreviousSecretUntil != nil && ep.PreviousSecretUntil.After(now) {
			row.PreviousSecretUntil = momentOf(*ep.PreviousSecretUntil, loc)
		}
		view.Rows = append(view.Rows, row)
	}
	if secret != nil {
		view.Secret = &NewSecret{EndpointID: secret.ID, Secret: secret.Secret, OldUntil: momentOfPtr(secret.PreviousSecretUntil, loc)}
	}
	s.page(w, r, status, "endpoints.html", &Page{Title: "Endpoints", Message: message, Data: view})
}

// consoleActionFailed shows the Endpoints page with what went wrong.
func (s *Console) consoleActionFailed(w http.ResponseWriter, r *http.Request, op string, err error) {
	status, msg := s.consoleError(op, err)
	s.showEndpoints(w, r, status, msg, nil)
}

// consoleEnableEndpoint enables or disables an endpoint, as PATCH
// /v1/endpoints/{id} with disabled does.
func (s *Console) consoleEnableEndpoint(enable bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, disabled := r.PathValue("id"), !enable
		if disabled && !s.confirmed(w, r, "disable") {
			return
		}
		verb := map[bool]string{true: "enabled", false: "disabled"}[enable]
		if _, err := s.cfg.API.UpdateEndpoint(r.Context(), id, ordersync.EndpointUpdate{Disabled: &disabled}); err != nil {
			s.consoleActionFailed(w, r, "change endpoint "+id, err)
			return
		}
		s.showEndpoints(w, r, http.StatusOK, fmt.Sprintf("Endpoint %s %s.", id, verb), nil)
	}
}

// consoleRotateSecret makes a new secret, as POST
// /v1/endpoints/{id}/rotate-secret does, and shows it on this answer
// alone: the page is not cached, and no other shows it.
func (s *Console) consoleRotateSecret(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.confirmed(w, r, "rotate-secret") {
		return
	}
	ep, err := s.cfg.API.RotateSecret(r.Context(), id, "")
	if err != nil {
		s.consoleActionFailed(w, r, "rotate the secret of endpoint "+id, err)
		return
	}
	s.showEndpoints(w, r, http.StatusOK, fmt.Sprintf("Endpoint %s has a new secret.", id), ep)
}

// consoleTestEndpoint sends a signed test event (a ping), as POST
// /v1/endpoints/{id}/test does, and says how the endpoint answered.
func (s *Console) consoleTestEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rep, err := s.cfg.Deliverer.Ping(r.Context(), id)
	if err != nil {
		s.consoleActionFailed(w, r, "send a test event to endpoint "+id, err)
		return
	}
	msg := fmt.Sprintf("Test event %s to endpoint %s: delivered, HTTP %d.", rep.WebhookID, id, rep.Status)
	if !rep.Delivered {
		msg = fmt.Sprintf("Test event %s to endpoint %s: not delivered", rep.WebhookID, id)
		if rep.Status != 0 {
			msg += fmt.Sprintf(", HTTP %d", rep.Status)
		}
		if rep.Error != "" {
			msg += ": " + rep.Error
		}
		msg += "."
	}
	s.showEndpoints(w, r, http.StatusOK, msg, nil)
}

// consoleReplayEndpoint queues the events since a time again, as POST
// /v1/endpoints/{id}/replay does; the time is read as the CLI's --since
// (a time, a date or a duration back from now).
func (s *Console) consoleReplayEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	since, err := ordersync.ParseSince(strings.TrimSpace(r.PostFormValue("since")), s.cfg.Clock())
	if err != nil {
		s.showEndpoints(w, r, http.StatusBadRequest, "Since: "+err.Error(), nil)
		return
	}
	n, err := s.cfg.Deliverer.Replay(r.Context(), id, since)
	if err != nil {
		s.consoleActionFailed(w, r, "replay to endpoint "+id, err)
		return
	}
	s.office.Note(r, fmt.Sprintf("endpoint %s since %s", id, since.UTC().Format(time.RFC3339)))
	s.showEndpoints(w, r, http.StatusOK, fmt.Sprintf("%d event(s) since %s queued again for endpoint %s.",
		n, since.UTC().Format("2006-01-02 15:04:05 UTC"), id), nil)
}

// endpointConfirmations are the endpoint actions that ask first, each
// with what it does.
var endpointConfirmations = map[string]struct{ question, what, button string }{
	"disable": {"Disable endpoint %s?", "Nothing more is sent to %s until it is enabled again: its events wait in its " +
		"queue and are delivered, in order, after it is enabled. Deliveries in flight end first.", "Disable"},
	"rotate-secret": {"Rotate the secret of endpoint %s?", "A new secret signs every delivery to %s from now on, shown " +
		"once on the next page; the old one signs beside it for the grace period, so the receiver has that long to take the new one.", "Rotate the secret"},
}

// EndpointConfirmView is the page that asks before disabling an endpoint
// or rotating its secret.
type EndpointConfirmView struct {
	EndpointID, Action, Query string
	Question, What, Button    string
	MayAct                    bool
}

// endpointConfirmPage asks to confirm an endpoint action.
func (s *Console) endpointConfirmPage(w http.ResponseWriter, r *http.Request) {
	id, action := r.PathValue("id"), r.URL.Query().Get("action")
	c, ok := endpointConfirmations[action]
	if !ok {
		s.showEndpoints(w, r, http.StatusBadRequest, fmt.Sprintf("Action %q is not one that asks first: disable or rotate-secret.", action), nil)
		return
	}
	ep, err := s.cfg.Endpoints.FindEndpoint(r.Context(), id)
	if err != nil {
		s.consoleActionFailed(w, r, "find endpoint "+id, err)
		return
	}
	query := ""
	if window, err := healthWindowOf(r.URL.Query()); err == nil && window != healthWindows[0] {
		query = "?" + url.Values{"window": {window.Param}}.Encode()
	}
	view := &EndpointConfirmView{EndpointID: ep.ID, Action: action, Query: query, Question: fmt.Sprintf(c.question, ep.ID),
		What: fmt.Sprintf(c.what, ep.URL), Button: c.button, MayAct: s.mayAct(r)}
	s.page(w, r, http.StatusOK, "endpointconfirm.html", &Page{Title: "Confirm", Data: view})
}

// confirmed reports whether the form of r confirms its action; when not,
// it sends the browser to the page that asks, and nothing is done.
func (s *Console) confirmed(w http.ResponseWriter, r *http.Request, action string) bool {
	if r.PostFormValue("confirmed") != "" {
		return true
	}
	s.office.Note(r, "endpoint "+r.PathValue("id")+": not confirmed, asked to confirm")
	q := url.Values{"action": {action}}
	if v := r.URL.Query().Get("window"); v != "" {
		q.Set("window", v)
	}
	http.Redirect(w, r, "/console/endpoints/"+url.PathEscape(r.PathValue("id"))+"/confirm?"+q.Encode(), http.StatusSeeOther)
	return false
}
