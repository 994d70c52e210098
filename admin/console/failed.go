package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console's failed deliveries of an endpoint: its delivery dead
// letters not replayed, each with its order, event, attempts and last
// answer, and for operators a replay of one, of those selected or of all
// of them. A bulk replay shows its count on a confirmation page first (a
// GET: the selection form is a plain form), and every replay answers with
// a redirect to the list, which says what was done, so a reload repeats
// nothing.

// routeFailed adds the failed deliveries' pages and actions.
func (s *Console) routeFailed(mux Mux) {
	on := s.cfg.Endpoints != nil && s.cfg.DeliveryDeadLetters != nil
	act := on && s.cfg.Deliverer != nil
	const failed, deliveries = "delivery dead letters", "deliveries (the worker role)"
	mux.HandleFunc("GET /console/endpoints/{id}/failed", api.When(on, failed, s.failedPage))
	mux.HandleFunc("GET /console/endpoints/{id}/failed/replay", api.When(act, deliveries, s.failedConfirmPage))
	mux.HandleFunc("POST /console/endpoints/{id}/failed/replay", api.When(act, deliveries, s.consoleReplayFailed))
}

// maxFailedPage is the most failed deliveries the page lists at once, as
// the dead letters' page: each row carries its replay form.
const maxFailedPage = 100

// FailedView is an endpoint's failed deliveries page.
type FailedView struct {
	Endpoint EndpointRow
	// Total counts the endpoint's failed deliveries; Rows are the newest
	// of them.
	Total  int
	Rows   []FailedRow
	MayAct bool
	// Result says what the replay just done did, from the redirect's URL.
	Result *FailedResult
	Zone   ZoneSwitch
}

// FailedRow is one failed delivery.
type FailedRow struct {
	ID                          int64
	OrderCode, Event, WebhookID string
	Attempts                    int
	Answer                      string
	At                          Moment
	// Again: the replay just done sent it and it failed again.
	Again bool
}

// FailedResult is a replay's outcome as the list shows it.
type FailedResult struct {
	Sent, Delivered, Skipped int
	Again                    []int64
	// AgainLinks name those listed by their order: the links to their rows.
	AgainLinks []AgainLink
}

// AgainLink is a failed delivery that failed again, as the result links it.
type AgainLink struct {
	ID    int64
	Label string
}

func (s *Console) failedPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	zoneName := s.storeZone(ctx, s.cfg.Stores.Default)
	loc, mode := s.zoneOf(r, zoneName)
	ep, dls, total, err := s.cfg.API.FailedDeliveries(ctx, id, maxFailedPage)
	if err != nil {
		status, msg := s.consoleError("list the failed deliveries of endpoint "+id, err)
		s.page(w, r, status, "failed.html", &Page{Title: "Failed deliveries", Message: msg,
			Data: &FailedView{Endpoint: EndpointRow{ID: id}, Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.Path}}})
		return
	}
	view := &FailedView{Endpoint: EndpointRow{ID: ep.ID, URL: ep.URL, Disabled: ep.Disabled, DisabledReason: ep.DisabledReason},
		Total: total, MayAct: s.mayAct(r), Result: failedResultOf(r.URL.Query()),
		Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.Path}}
	for _, dl := range dls {
		row := FailedRow{ID: dl.ID, OrderCode: dl.OrderCode, Event: string(dl.Event), WebhookID: dl.WebhookID,
			Attempts: dl.Attempts, Answer: deliveryAnswer(dl), At: momentOf(dl.CreatedAt, loc)}
		if view.Result != nil && slices.Contains(view.Result.Again, dl.ID) {
			row.Again = true
			label := row.OrderCode
			if label == "" {
				label = fmt.Sprint("delivery ", dl.ID)
			}
			view.Result.AgainLinks = append(view.Result.AgainLinks, AgainLink{ID: dl.ID, Label: label + " (" + row.Event + ")"})
		}
		view.Rows = append(view.Rows, row)
	}
	s.page(w, r, http.StatusOK, "failed.html", &Page{Title: "Failed deliveries", Data: view})
}

// deliveryAnswer is a failed delivery's last answer in a line: its HTTP
// status and the start of its body, or the error that stood for one.
func deliveryAnswer(dl *ordersync.DeliveryDeadLetter) string {
	detail := dl.LastError
	if body := strings.TrimSpace(dl.LastBody); body != "" {
		detail = ordersync.Clip(body, 120)
	}
	if a := ordersync.DeliveryError(dl.LastStatus, detail); a != "" {
		return a
	}
	return "no answer"
}

// failedResultOf reads a replay's outcome from the list's URL (sent,
// delivered, skipped, again), or nil when there is none.
func failedResultOf(q url.Values) *FailedResult {
	if !q.Has("sent") {
		return nil
	}
	num := func(name string) int {
		n, _ := strconv.Atoi(q.Get(name))
		return max(n, 0)
	}
	res := &FailedResult{Sent: num("sent"), Delivered: num("delivered"), Skipped: num("skipped")}
	for _, v := range strings.Split(q.Get("again"), ",") {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			res.Again = append(res.Again, n)
		}
	}
	return res
}

// ConfirmView is a bulk replay's confirmation page.
type ConfirmView struct {
	EndpointID, EndpointURL string
	// All: every failed delivery; otherwise IDs, those selected.
	All   bool
	IDs   []int64
	Count int
	// More: more failed deliveries than one replay sends.
	More   bool
	Limit  int
	MayAct bool
}

// selection reads the failed deliveries a form names: all, or letter ids.
func selection(form url.Values) (all bool, ids []int64, err error) {
	all = form.Get("all") != ""
	for _, v := range form["letter"] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return false, nil, fmt.Errorf("%q is not a failed delivery's number", v)
		}
		ids = append(ids, n)
	}
	switch {
	case all && len(ids) > 0:
		return false, nil, fmt.Errorf("choose either every failed delivery or those selected, not both")
	case !all && len(ids) == 0:
		return false, nil, fmt.Errorf("select the failed deliveries to replay, or choose Replay every failed delivery")
	case len(ids) > api.MaxFailedReplay:
		return false, nil, fmt.Errorf("at most %d failed deliveries are replayed at a time; %d are selected", api.MaxFailedReplay, len(ids))
	}
	return all, ids, nil
}

// failedConfirmPage asks to confirm a bulk replay, with its count.
func (s *Console) failedConfirmPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	all, ids, err := selection(r.URL.Query())
	if err != nil {
		s.failedRefused(w, r, id, http.StatusBadRequest, "Replay: "+err.Error())
		return
	}
	ep, dls, total, err := s.cfg.API.FailedDeliveries(ctx, id, api.MaxFailedList)
	if err != nil {
		status, msg := s.consoleError("replay the failed deliveries of endpoint "+id, err)
		s.failedRefused(w, r, id, status, msg)
		return
	}
	view := &ConfirmView{EndpointID: ep.ID, EndpointURL: ep.URL, All: all, Limit: api.MaxFailedReplay, MayAct: s.mayAct(r)}
	if all {
		view.Count, view.More = min(total, api.MaxFailedReplay), total > api.MaxFailedReplay
	} else {
		for _, dl := range dls {
			if slices.Contains(ids, dl.ID) {
				view.IDs = append(view.IDs, dl.ID)
			}
		}
		view.Count = len(view.IDs)
	}
	if view.Count == 0 {
		s.failedRefused(w, r, id, http.StatusConflict, "Replay: none of these deliveries is failed any more; nothing to replay.")
		return
	}
	s.page(w, r, http.StatusOK, "failedconfirm.html", &Page{Title: "Confirm the replay", Data: view})
}

// failedRefused shows the list with why an action was not done.
func (s *Console) failedRefused(w http.ResponseWriter, r *http.Request, id string, status int, msg string) {
	s.page(w, r, status, "failed.html", &Page{Title: "Failed deliveries", Message: msg,
		Data: &FailedView{Endpoint: EndpointRow{ID: id}, Zone: ZoneSwitch{Mode: "store", Back: "/console/endpoints/" + url.PathEscape(id) + "/failed"}}})
}

// consoleReplayFailed replays the failed deliveries the form names: one
// (a row's button), or, confirmed with their count, those selected or all;
// a bulk replay without its confirmation goes to the confirmation page.
// It answers with a redirect to the list saying what was done.
func (s *Console) consoleReplayFailed(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	list := "/console/endpoints/" + url.PathEscape(id) + "/failed"
	all, ids, err := selection(r.PostForm)
	if err != nil {
		s.failedRefused(w, r, id, http.StatusBadRequest, "Replay: "+err.Error())
		return
	}
	if (all || len(ids) > 1) && r.PostFormValue("confirmed") == "" {
		q := url.Values{"letter": r.PostForm["letter"]}
		if all {
			q = url.Values{"all": {"1"}}
		}
		s.office.Note(r, "endpoint "+id+": not confirmed, asked to confirm")
		http.Redirect(w, r, list+"/replay?"+q.Encode(), http.StatusSeeOther)
		return
	}
	res, err := s.cfg.API.ReplayFailed(r.Context(), id, ids, all)
	if err != nil {
		status, msg := s.consoleError("replay the failed deliveries of endpoint "+id, err)
		s.failedRefused(w, r, id, status, msg)
		return
	}
	s.office.Note(r, fmt.Sprintf("endpoint %s: %d sent, %d delivered, %d failed again", id, res.Sent, len(res.Delivered), len(res.FailedAgain)))
	again := make([]string, len(res.FailedAgain))
	for i, n := range res.FailedAgain {
		again[i] = strconv.FormatInt(n, 10)
	}
	q := url.Values{"sent": {strconv.Itoa(res.Sent)}, "delivered": {strconv.Itoa(len(res.Delivered))},
		"skipped": {strconv.Itoa(len(res.Skipped))}, "again": {strings.Join(again, ",")}}
	http.Redirect(w, r, list+"?"+q.Encode(), http.StatusSeeOther)
}
