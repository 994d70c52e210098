package console

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
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
	// Money is what each store collected today and yesterday: the page
	// shows it first; its script does not refresh it.
	Money []StoreMoney `json:"-"`
}

// StoreMoney is one store's collected totals of today and yesterday, on
// the store's days: its zone (Zone names it with its offsets over the two
// days), one row per currency of the orders collected on either day.
type StoreMoney struct {
	// Account is the store, AllStores (and All set) for every store.
	Account          string
	All              bool
	Zone             string
	Today, Yesterday string // the dates
	Rows             []MoneyRow
	// AsOf is when the figures are current, in the days' zone, as Daily
	// totals says it; Behind, that the indexer has changes to count yet.
	AsOf   string
	Behind bool
	asOf   time.Time
}

// MoneyRow is one currency's collected totals of the two days.
type MoneyRow struct {
	Currency         string
	Today, Yesterday MoneyFigure
}

// figure is yesterday's figure (0) or today's (1).
func (r *MoneyRow) figure(day int) *MoneyFigure {
	if day == 0 {
		return &r.Yesterday
	}
	return &r.Today
}

// MoneyFigure is the orders collected on a day in a currency: their count,
// their exact sum, and Link, the Orders page of exactly those orders.
type MoneyFigure struct {
	Count int
	Total string
	Link  string
}

// collectedQuery is the Orders page's query of the orders of account
// collected on the day [date, next) of zone: paid on the day (the paid-day
// range the daily totals' paid figure uses), and PAID or FINALIZED now, so
// not reversed since. The overview sums exactly the orders it selects.
func collectedQuery(account, zone, date, next string) url.Values {
	return url.Values{"account": {account}, "status": {ordersync.StatusGroupCollected}, "tz": {zone},
		"paidFrom": {date}, "paidTo": {next}, "count": {"exact"}}
}

// storeMoney sums what each store collected today and yesterday, on its
// days, and, with more than one store, what all of them collected on UTC
// days (the days Daily totals gives every store unless a zone is chosen),
// each currency apart. It reads the daily report's collected figure
// (ordersync.Reports, report_buckets), so that its cost grows with the
// stores and days, not with the orders; each figure's link lists the
// orders it counts (collectedQuery). Without a report reader it has none.
func (s *Console) storeMoney(ctx context.Context) ([]StoreMoney, error) {
	if s.cfg.Reports == nil {
		return nil, nil
	}
	var out []StoreMoney
	stores := s.cfg.Stores.List()
	for _, account := range stores {
		loc, err := ordersync.ParseZone(s.storeZone(ctx, account))
		if err != nil {
			loc = time.UTC
		}
		m, err := s.moneyOf(ctx, []string{account}, account, loc)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) > 1 {
		m, err := s.moneyOf(ctx, stores, api.AllStores, time.UTC)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// moneyOf is what the stores, together named account (AllStores: every
// store), collected today and yesterday, on the days of loc.
func (s *Console) moneyOf(ctx context.Context, stores []string, account string, loc *time.Location) (StoreMoney, error) {
	now := s.cfg.Clock().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	days := ordersync.ReportDays(today.AddDate(0, 0, -1), today.AddDate(0, 0, 1), loc)
	m := StoreMoney{Account: account, All: account == api.AllStores, Zone: ordersync.ZoneLabel(loc, days[0].Start, days[1].End),
		Yesterday: days[0].Date, Today: days[1].Date}
	// dates[i] and dates[i+1] bound yesterday (0) and today (1).
	dates := []string{days[0].Date, days[1].Date, today.AddDate(0, 0, 1).Format(ordersync.DateLayout)}
	type sum struct {
		count int
		total ordersync.Amount
	}
	byCurrency := map[string]*[2]sum{}
	params := ordersync.DailyTotalsParams{From: today.AddDate(0, 0, -1), To: today.AddDate(0, 0, 1), Location: loc}
	for i, store := range stores {
		params.Account = store
		t, err := s.cfg.Reports.DailyTotals(ctx, params)
		if err != nil {
			return m, fmt.Errorf("store %s: %w", store, err)
		}
		if i == 0 || t.AsOf.Before(m.asOf) {
			m.asOf = t.AsOf
		}
		m.Behind = m.Behind || t.Behind
		for _, d := range t.Days {
			day := slices.Index(dates[:2], d.Date)
			if day < 0 || d.Collected.Count == 0 {
				continue
			}
			// A total the report cannot give exactly is an error, never a
			// figure left out of the sum.
			total, err := ordersync.ParseAmount(d.Collected.Total)
			if err != nil {
				return m, fmt.Errorf("store %s, %s %s collected: %w", store, d.Date, d.Currency, err)
			}
			sums := byCurrency[d.Currency]
			if sums == nil {
				sums = &[2]sum{{total: ordersync.AmountFromInt(0)}, {total: ordersync.AmountFromInt(0)}}
				byCurrency[d.Currency] = sums
			}
			sums[day].count += d.Collected.Count
			sums[day].total = sums[day].total.Add(total)
		}
	}
	m.AsOf = asOf(m.asOf, loc)
	for _, currency := range slices.Sorted(maps.Keys(byCurrency)) {
		row := MoneyRow{Currency: currency}
		for i := range days {
			q := collectedQuery(account, loc.String(), dates[i], dates[i+1])
			q.Set("currency", currency)
			*row.figure(i) = MoneyFigure{Count: byCurrency[currency][i].count,
				Total: ordersync.FormatMinorUnits(byCurrency[currency][i].total, currency), Link: "/console/orders?" + q.Encode()}
		}
		m.Rows = append(m.Rows, row)
	}
	return m, nil
}

func (s *Console) overview(r *http.Request) (*OverviewView, error) {
	view := &OverviewView{Text: map[string]string{}, Tables: map[string][][]string{}}
	if s.cfg.Overview == nil {
		return view, nil
	}
	account := s.cfg.Stores.Account(r)
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
		t["lag"] = fmt.Sprintf("median %s, at most %s (over %d notices)", roundDuration(o.Lag.Median), roundDuration(o.Lag.Max), o.Lag.Samples)
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

func (s *Console) overviewPage(w http.ResponseWriter, r *http.Request) {
	view, err := s.overview(r)
	if err != nil {
		s.office.Fail(w, "read the overview", err, "")
		return
	}
	if view.Money, err = s.storeMoney(r.Context()); err != nil {
		s.office.Fail(w, "read the collected totals", err, "")
		return
	}
	s.page(w, r, http.StatusOK, "home.html", &Page{Title: "Console", Data: view})
}

// overviewJSON answers GET /console/overview.json, the page's figures for
// its script, by the console's session.
func (s *Console) overviewJSON(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Overview == nil {
		api.WriteProblem(w, http.StatusNotImplemented, "the overview is not enabled in this process", nil)
		return
	}
	view, err := s.overview(r)
	if err != nil {
		s.office.Fail(w, "read the overview", err, "")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	api.WriteJSON(w, http.StatusOK, view)
}
