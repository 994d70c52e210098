package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
)

// The console's home: the Overview, figures that hold across processes
// because they are read from the mirror (ordersync.OverviewReader), not
// from this process's counters. The page reads without JavaScript;
// static/overview.js refreshes it from /console/overview.json, which
// carries the same figures as the page shows them.

// DefaultOverviewRefresh is how often the page's script reads the figures
// again.
const DefaultOverviewRefresh = 5 * time.Second

// OverviewView is the home page, and, as JSON, what its script reads.
type OverviewView struct {
	// Enabled is false when this process has no OverviewReader.
	Enabled bool `json:"-"`
	// RefreshMs is the script's period.
	RefreshMs     int64 `json:"refreshMs"`
	WindowMinutes int   `json:"windowMinutes"`
	HealthMinutes int   `json:"healthMinutes"`
	// The figures, as numbers for a program.
	Webhooks    int                     `json:"webhooks"`
	Mirrored    int                     `json:"mirrored"`
	LagSamples  int                     `json:"lagSamples"`
	LagMedianMs int64                   `json:"lagMedianMs"`
	LagMaxMs    int64                   `json:"lagMaxMs"`
	Waiting     int                     `json:"waiting"`
	ChecksDue   int                     `json:"checksDue"`
	Unsent      int                     `json:"unsent"`
	DeadLetters []ordersync.ReasonCount `json:"-"`
	// Text is each figure as the page shows it, by the name its element
	// carries in data-figure; Tables, the rows of each table by the name
	// its body carries in data-table.
	Text   map[string]string     `json:"text"`
	Tables map[string][][]string `json:"tables"`
	Zone   ZoneSwitch            `json:"-"`
}

func (s *Server) overview(r *http.Request) (*OverviewView, error) {
	view := &OverviewView{Text: map[string]string{}, Tables: map[string][][]string{}}
	if s.cfg.Overview == nil {
		return view, nil
	}
	account := s.account(r)
	zoneName := s.storeZone(r.Context(), account)
	loc, mode := s.zoneOf(r, zoneName)
	view.Zone = ZoneSwitch{Mode: mode, Store: zoneName, Back: "/console/"}
	now := s.cfg.Clock()
	o, err := s.cfg.Overview.Overview(r.Context(), ordersync.OverviewParams{Account: account, Now: now})
	if err != nil {
		return nil, err
	}
	p := o.Params
	minutes := p.Window.Minutes()
	*view = OverviewView{Enabled: true, RefreshMs: s.cfg.OverviewRefresh.Milliseconds(), WindowMinutes: int(minutes),
		HealthMinutes: int(p.HealthWindow.Minutes()), Webhooks: o.Webhooks, Mirrored: o.Mirrored, LagSamples: o.Lag.Samples,
		LagMedianMs: o.Lag.Median.Milliseconds(), LagMaxMs: o.Lag.Max.Milliseconds(), Waiting: o.Waiting,
		ChecksDue: o.Checks.Due, Unsent: o.Unsent, DeadLetters: o.DeadLetters, Zone: view.Zone,
		Text: map[string]string{}, Tables: map[string][][]string{}}
	shown := func(t time.Time) string { return momentOf(t, loc).Shown }
	t := view.Text
	t["at"] = shown(now)
	t["webhooks-rate"] = perMinute(o.Webhooks, minutes)
	t["mirrored-rate"] = perMinute(o.Mirrored, minutes)
	t["webhooks"] = strconv.Itoa(o.Webhooks)
	t["mirrored"] = strconv.Itoa(o.Mirrored)
	t["lag"] = "—"
	if o.Lag.Samples > 0 {
		t["lag"] = fmt.Sprintf("median %s, at most %s (%d webhooks)", roundDuration(o.Lag.Median), roundDuration(o.Lag.Max), o.Lag.Samples)
	}
	t["waiting"] = strconv.Itoa(o.Waiting)
	t["waiting-since"] = ""
	if o.Waiting > 0 {
		t["waiting-since"] = "the oldest heard of " + roundDuration(now.Sub(o.OldestWaiting)) + " ago, at " + shown(o.OldestWaiting)
	}
	t["checks"] = strconv.Itoa(o.Checks.Due)
	t["checks-oldest"] = ""
	if o.Checks.Due > 0 {
		t["checks-oldest"] = "the most overdue due " + roundDuration(now.Sub(o.Checks.Oldest)) + " ago, at " + shown(o.Checks.Oldest)
	}
	t["unsent"] = strconv.Itoa(o.Unsent)
	t["unsent-oldest"] = ""
	if h := o.OldestUnsent; h != nil {
		t["unsent-oldest"] = fmt.Sprintf("the oldest, %s of order %s, waiting %s since %s", h.Subject, h.OrderCode,
			roundDuration(now.Sub(h.CreatedAt)), shown(h.CreatedAt))
	}
	dl := [][]string{}
	total := 0
	for _, rc := range o.DeadLetters {
		dl = append(dl, []string{string(rc.Reason), strconv.Itoa(rc.Count)})
		total += rc.Count
	}
	view.Tables["dead-letters"] = dl
	t["dead-letters"] = strconv.Itoa(total)
	eps := [][]string{}
	for _, e := range o.Endpoints {
		lastErr := "—"
		if f := e.LastFailure; f != nil {
			lastErr = ordersync.DeliveryError(f.Status, f.Detail) + " (" + shown(f.At) + ")"
		}
		eps = append(eps, []string{e.ID, e.URL, endpointState(e), strconv.Itoa(e.Delivered), strconv.Itoa(e.Failed),
			strconv.Itoa(e.DeadLetters), lastErr})
	}
	view.Tables["endpoints"] = eps
	return view, nil
}

// endpointState says in a word or two how an endpoint is doing.
func endpointState(e ordersync.EndpointHealth) string {
	switch {
	case e.Disabled && e.DisabledReason != "":
		return "disabled (" + e.DisabledReason + ")"
	case e.Disabled:
		return "disabled"
	case e.Failed > 0:
		return fmt.Sprintf("failing: %d%% delivered", e.Delivered*100/(e.Delivered+e.Failed))
	case e.Delivered > 0:
		return "healthy"
	}
	return "idle"
}

// perMinute is n over minutes, as a rate per minute with one decimal.
func perMinute(n int, minutes float64) string {
	if minutes <= 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(n)/minutes, 'f', 1, 64)
}

// roundDuration writes d to a precision a person reads: milliseconds
// under a second, seconds under an hour, minutes beyond.
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) {
	view, err := s.overview(r)
	if err != nil {
		s.fail(w, "read the overview", err, "")
		return
	}
	s.page(w, r, http.StatusOK, "home.html", &Page{Title: "Console", Data: view})
}

// overviewJSON answers GET /console/overview.json, the page's figures for
// its script, by the console's session.
func (s *Server) overviewJSON(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Overview == nil {
		writeProblem(w, http.StatusNotImplemented, "the overview is not enabled in this process", nil)
		return
	}
	view, err := s.overview(r)
	if err != nil {
		s.fail(w, "read the overview", err, "")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, view)
}
