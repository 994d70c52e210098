package console

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console's Dead letters page: the letters grouped by reason, the
// API's filter in the URL, each letter's detail, and for operators a
// replay of one letter or, as a background job, of every letter the filter
// matches. Replays go through cfg.Replayer, as the API's do.

// routeDeadLetters adds the Dead letters pages and their actions.
func (s *Console) routeDeadLetters(mux Mux) {
	on, replay := s.cfg.DeadLetters != nil, s.cfg.DeadLetters != nil && s.cfg.Replayer != nil
	jobs := s.cfg.ReplayJobs != nil
	mux.HandleFunc("GET /console/dead-letters", api.When(on, "dead letters", s.deadLettersPage))
	mux.HandleFunc("GET /console/dead-letters/{id}", api.When(on, "dead letters", s.deadLetterPage))
	mux.HandleFunc("GET /console/dead-letters/jobs/{id}", api.When(on && jobs, "replay jobs", s.replayJobPage))
	mux.HandleFunc("POST /console/dead-letters/{id}/replay", api.When(replay, "replay", s.consoleReplayDeadLetter))
	mux.HandleFunc("POST /console/dead-letters/{id}/track", api.When(on && s.cfg.Follower != nil, "tracking", s.consoleTrackLetterOrder))
	mux.HandleFunc("GET /console/dead-letters/replay", api.When(replay && jobs, "replay jobs", s.deadLettersConfirmPage))
	mux.HandleFunc("POST /console/dead-letters/replay", api.When(replay && jobs, "replay jobs", s.consoleReplayDeadLetters))
}

// maxLetterPage is the most letters the page lists at once: each row
// carries its replay form, and a page must weigh at most 100 KB.
const maxLetterPage = 100

// DeadLettersView is the Dead letters page.
type DeadLettersView struct {
	Query  url.Values
	Errors map[string][]string
	// Reasons counts the letters of each reason the rest of the filter
	// selects; Matched is how many the whole filter does.
	Reasons []ReasonCount
	Matched int
	Letters []DeadLetterRow
	NextURL string
	// Filter is the query of the page, which the forms carry back.
	Filter string
	MayAct bool
	Jobs   []JobView
	Zone   ZoneSwitch
	// Stores are the store selector's entries: every store, each store
	// served, and the account the URL named when no store is it (a
	// letter's account the deployment no longer serves).
	Stores []StoreOption
}

// Value is the query's value of the parameter name, for the form.
func (v *DeadLettersView) Value(name string) string { return v.Query.Get(name) }

// ReasonCount is one reason's group of letters.
type ReasonCount struct {
	Reason  string
	Count   int
	URL     string
	Current bool
}

// DeadLetterRow is one letter of the list.
type DeadLetterRow struct {
	ID                   int64
	Reason, Order, Error string
	// OrderCode is the order's code, from the letter or the mirror, when
	// known: the row links the order.
	OrderCode             string
	Attempts, ReplayCount int
	Created, Replayed     Moment
}

func (s *Console) deadLettersPage(w http.ResponseWriter, r *http.Request) {
	s.showDeadLetters(w, r, r.URL.Query(), http.StatusOK, "")
}

// showDeadLetters renders the Dead letters page for the query q, with
// message on top (what an action just did).
func (s *Console) showDeadLetters(w http.ResponseWriter, r *http.Request, q url.Values, status int, message string) {
	ctx := r.Context()
	zoneName := s.storeZone(ctx, s.cfg.Stores.Default)
	loc, mode := s.zoneOf(r, zoneName)
	q = cloneValues(q)
	view := &DeadLettersView{Query: q, Filter: q.Encode(), MayAct: s.mayAct(r),
		Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: "/console/dead-letters?" + q.Encode()}}
	chosen := q.Get("account")
	view.Stores = s.storeOptions(api.StoreChoice{Account: chosen, All: chosen == "" || chosen == api.AllStores}, true)
	if chosen != "" && chosen != api.AllStores && !slices.Contains(s.cfg.Stores.List(), chosen) {
		view.Stores = append(view.Stores, StoreOption{Value: chosen, Label: chosen + " (not served)", Selected: true})
	}
	if s.cfg.ReplayJobs != nil {
		jobs, err := s.cfg.ReplayJobs.ListReplayJobs(ctx, keptJobs)
		if err != nil {
			s.office.Fail(w, "list replay jobs", err, "")
			return
		}
		for _, j := range jobs {
			view.Jobs = append(view.Jobs, s.jobView(j, loc))
		}
	}
	f, fields := api.ParseDeadLetterQuery(q)
	if fields != nil {
		view.Errors = fields
		s.page(w, r, http.StatusBadRequest, "deadletters.html", &Page{Title: "Dead letters", Message: message, Data: view})
		return
	}
	all := f
	all.Reason = ""
	counts, err := s.cfg.DeadLetters.CountDeadLetters(ctx, all)
	if err != nil {
		s.office.Fail(w, "count dead letters", err, "")
		return
	}
	for _, reason := range ordersync.DeadLetterReasons {
		u := cloneValues(q)
		u.Set("reason", string(reason))
		u.Del("before")
		view.Reasons = append(view.Reasons, ReasonCount{Reason: string(reason), Count: counts[reason],
			URL: "/console/dead-letters?" + u.Encode(), Current: f.Reason == reason})
		if f.Reason == "" || f.Reason == reason {
			view.Matched += counts[reason]
		}
	}
	if f.Limit == 0 {
		f.Limit = defaultConsoleLimit
	}
	f.Limit = min(f.Limit, maxLetterPage)
	letters, err := s.cfg.DeadLetters.ListDeadLetters(ctx, f)
	if err != nil {
		s.office.Fail(w, "list dead letters", err, "")
		return
	}
	codes := s.letterCodes(ctx, letters)
	for _, dl := range letters {
		view.Letters = append(view.Letters, DeadLetterRow{ID: dl.ID, Reason: string(dl.Reason), Order: letterOrder(dl), OrderCode: codes[dl.ID],
			Error: dl.LastError, Attempts: dl.Attempts, ReplayCount: dl.ReplayCount,
			Created: momentOf(dl.CreatedAt, loc), Replayed: momentOfPtr(dl.ReplayedAt, loc)})
	}
	if len(letters) == f.Limit {
		next := cloneValues(q)
		next.Set("before", strconv.FormatInt(letters[len(letters)-1].ID, 10))
		view.NextURL = "/console/dead-letters?" + next.Encode()
	}
	s.page(w, r, status, "deadletters.html", &Page{Title: "Dead letters", Message: message, Data: view})
}

// letterCodes are the order codes of letters, by letter id: the letter's
// own, or the mirror's for its order id. A mirror that cannot say leaves
// the ids shown (logged): the list still reads.
func (s *Console) letterCodes(ctx context.Context, letters []*ordersync.DeadLetter) map[int64]string {
	out := map[int64]string{}
	ids := map[string][]ordersync.ID{}
	for _, dl := range letters {
		if dl.OrderCode != "" {
			out[dl.ID] = dl.OrderCode
		} else if dl.OrderID != "" {
			ids[dl.Account] = append(ids[dl.Account], dl.OrderID)
		}
	}
	if s.cfg.OrderCodes == nil {
		return out
	}
	for account, list := range ids {
		codes, err := s.cfg.OrderCodes.ResolveOrderCodes(ctx, account, list)
		if err != nil {
			s.cfg.Logger.Warn("admin: name the orders of dead letters", "account", account, "err", err)
			continue
		}
		for _, dl := range letters {
			if c, ok := codes[dl.OrderID]; ok && dl.Account == account && out[dl.ID] == "" {
				out[dl.ID] = c
			}
		}
	}
	return out
}

// consoleTrackLetterOrder tracks the order of a letter by the code the
// form gives (the one the page knows, or one the operator found): the
// mirror then knows the order, and the letter, if still not replayed, is
// replayed so its event resolves. It answers with a redirect to the
// letter's page.
func (s *Console) consoleTrackLetterOrder(w http.ResponseWriter, r *http.Request) {
	id, ok := api.DeadLetterID(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	dl, err := s.cfg.DeadLetters.FindDeadLetter(ctx, id)
	if err != nil {
		status, msg := s.consoleError(fmt.Sprintf("find dead letter %d", id), err)
		s.showDeadLetters(w, r, url.Values{}, status, msg)
		return
	}
	code := strings.TrimSpace(r.PostFormValue("code"))
	if code == "" {
		s.renderDeadLetter(w, r, dl, http.StatusBadRequest, "Order code: type the order's code (as the payment portal shows it) to track it.")
		return
	}
	s.office.Note(r, fmt.Sprintf("dead letter %d: order %s", id, code))
	if _, err := s.cfg.Follower.TrackOrder(ctx, dl.Account, code); err != nil {
		status, msg := s.consoleError("track order "+code, err)
		s.renderDeadLetter(w, r, dl, status, msg)
		return
	}
	// Tracking may have replayed it already (the service replays the
	// unresolved letters of an order it comes to know).
	if dl, err = s.cfg.DeadLetters.FindDeadLetter(ctx, id); err == nil && dl.ReplayedAt == nil && s.cfg.Replayer != nil {
		err = s.cfg.Replayer.ReplayDeadLetter(ctx, id)
	}
	if err != nil {
		status, msg := s.consoleError(fmt.Sprintf("replay dead letter %d", id), err)
		s.renderDeadLetter(w, r, dl, status, msg)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/console/dead-letters/%d?tracked=%s", id, url.QueryEscape(code)), http.StatusSeeOther)
}

// letterOrder names the order a letter is about, by what it knows.
func letterOrder(dl *ordersync.DeadLetter) string {
	switch {
	case dl.OrderCode != "":
		return dl.OrderCode
	case dl.OrderID != "":
		return "id " + string(dl.OrderID)
	case dl.OrderReference != "":
		return "reference " + dl.OrderReference
	}
	return ""
}

// mayAct reports whether r's principal is an operator: the pages leave the
// action forms out for the others (the server refuses them anyway).
func (s *Console) mayAct(r *http.Request) bool {
	p, ok := s.office.Principal(r)
	return ok && p.Role.May(ordersync.AccessAct)
}

// DeadLetterView is one letter's page.
type DeadLetterView struct {
	Letter *ordersync.DeadLetter
	Order  string
	// OrderCode is the order's code when the letter or the mirror knows
	// it; MayTrack offers "track this order".
	OrderCode         string
	MayTrack          bool
	Created, Replayed Moment
	Headers           []Header
	Body              string
	MayAct            bool
	Zone              ZoneSwitch
}

// Header is one header of a letter's message.
type Header struct{ Name, Value string }

func (s *Console) deadLetterPage(w http.ResponseWriter, r *http.Request) {
	dl, ok := s.cfg.API.FindDeadLetter(w, r)
	if !ok {
		return
	}
	msg := ""
	if code := r.URL.Query().Get("tracked"); code != "" {
		msg = fmt.Sprintf("Order %s tracked: the mirror has it now.", code)
		if dl.ReplayedAt != nil {
			msg += " This letter was replayed, so its event resolves to the order."
		}
	}
	s.renderDeadLetter(w, r, dl, http.StatusOK, msg)
}

// renderDeadLetter renders a letter's page with message on top.
func (s *Console) renderDeadLetter(w http.ResponseWriter, r *http.Request, dl *ordersync.DeadLetter, status int, message string) {
	zoneName := s.storeZone(r.Context(), s.cfg.Stores.Default)
	loc, mode := s.zoneOf(r, zoneName)
	view := &DeadLetterView{Letter: dl, Order: letterOrder(dl), OrderCode: s.letterCodes(r.Context(), []*ordersync.DeadLetter{dl})[dl.ID],
		MayTrack: s.mayAct(r) && s.cfg.Follower != nil, Created: momentOf(dl.CreatedAt, loc),
		Replayed: momentOfPtr(dl.ReplayedAt, loc), MayAct: s.mayAct(r), Body: string(dl.Body),
		Zone: ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.Path}}
	for _, k := range slices.Sorted(maps.Keys(dl.Headers)) {
		view.Headers = append(view.Headers, Header{k, dl.Headers[k]})
	}
	var doc any
	if json.Unmarshal(dl.Body, &doc) == nil {
		if b, err := json.MarshalIndent(doc, "", "  "); err == nil {
			view.Body = string(b)
		}
	}
	s.page(w, r, status, "deadletter.html", &Page{Title: fmt.Sprintf("Dead letter %d", dl.ID), Message: message, Data: view})
}

// filterOf is the Dead letters query a form carried back.
func filterOf(r *http.Request) url.Values {
	q, err := url.ParseQuery(r.PostFormValue("filter"))
	if err != nil {
		return url.Values{}
	}
	return q
}

// consoleError is the status and message a console page shows for the
// error of an action, by the API's table; an error it does not know is
// logged and shown as a failure of op alone.
func (s *Console) consoleError(op string, err error) (int, string) {
	status, ok := api.StatusOf(err)
	if !ok {
		s.cfg.Logger.Error("admin console", "op", op, "err", err)
		return http.StatusInternalServerError, op + " failed."
	}
	return status, op + ": " + err.Error()
}
