package console

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console's Daily totals page: the daily report (ordersync.Reports, as
// GET /v1/reports/daily reads it) as a table and one bar chart per
// currency drawn on the server, and the same report as CSV.

// defaultTotalsDays is the range the page shows without one in its URL.
const defaultTotalsDays = 30

// A page's weight stays under 100 KB for any range: the table shows
// totalsTableRows rows at a time (the CSV has them all), and beyond
// labelledBarsDays days the bars carry no label of their own (the table
// says each figure).
const (
	totalsTableRows  = 30
	labelledBarsDays = 92
)

// routeTotals adds the Daily totals page and its CSV.
func (s *Console) routeTotals(mux Mux) {
	mux.HandleFunc("GET /console/totals", api.When(s.cfg.Reports != nil, "reports", s.totalsPage))
	mux.HandleFunc("GET /console/totals.csv", api.When(s.cfg.Reports != nil, "reports", s.totalsCSV))
}

// TotalsView is the Daily totals page.
type TotalsView struct {
	// TZ is the zone the URL chose, "" for the store's (or UTC for all
	// stores); Zone names the zone the days are in, with its offsets.
	From, To, TZ string
	Zone         string
	Stores       []StoreOption
	AllStores    bool
	Errors       map[string][]string
	Totals       ordersync.DailyTotals
	// Rows are the table's page of Totals.Days, from the row Offset.
	Rows             []TotalsRow
	Offset           int
	PrevURL, NextURL string
	Charts           []TotalsChart
	CSV              string
	// AsOf is when the figures are current, in the days' zone; the page
	// says so, and says it plainly when Totals.Behind.
	AsOf string
}

// TotalsRow is a row of the table: one day's figures in one currency (and
// store), each linked to the Orders page of exactly the orders it counts.
type TotalsRow struct {
	ordersync.DayTotals
	// Links are the Orders pages of the figures, by figure: created, paid,
	// cancelled, finalized, reversed. Net is a difference of two figures,
	// not a set of orders.
	Links map[string]string
}

// totalsFigures are the figures of a day that select orders: each is also
// the name of the listing's range (createdFrom/createdTo, …) that selects
// the orders it counts (store.TestDailyTotalsFiguresAreTheirOrders holds
// them to the figures).
var totalsFigures = []string{"created", "paid", "cancelled", "finalized", "reversed"}

// totalsRow links each figure of d, a day of a report in zone tz of the
// store account, to its orders.
func totalsRow(d ordersync.DayTotals, account, tz string) TotalsRow {
	row := TotalsRow{DayTotals: d, Links: map[string]string{}}
	if d.Account != "" {
		account = d.Account
	}
	next := d.Date
	if day, err := ordersync.ParseDate(d.Date); err == nil {
		next = day.AddDate(0, 0, 1).Format(ordersync.DateLayout)
	}
	for _, figure := range totalsFigures {
		q := url.Values{"account": {account}, "tz": {tz}, "currency": {d.Currency}, "count": {"exact"},
			figure + "From": {d.Date}, figure + "To": {next}}
		row.Links[figure] = "/console/orders?" + q.Encode()
	}
	return row
}

// TotalsChart is the bar chart of one currency: each day's paid total.
type TotalsChart struct {
	// Labelled: each bar says its day and figure on hover.
	Labelled    bool
	Currency    string
	Max         string
	Bars        []TotalsBar
	Width       int
	First, Last string
}

// TotalsBar is one day's bar; X, Y and Height are in the chart's own
// units (chartHeight high).
type TotalsBar struct {
	Date, Total  string
	Count        int
	X, Y, Height int
}

// The chart's geometry, in SVG user units.
const (
	chartHeight = 120
	chartBar    = 10
	chartGap    = 2
)

// totalsParams reads the page's query: from, to (excluded) and tz, any of
// them missing taking its default, the last defaultTotalsDays days up to
// today in the zone of the days: tz, else the chosen store's, else UTC
// (every store's days are UTC's unless a zone is chosen).
func (s *Console) totalsParams(r *http.Request, choice api.StoreChoice) (from, to, tz string) {
	q := r.URL.Query()
	from, to, tz = q.Get("from"), q.Get("to"), q.Get("tz")
	days := tz
	if days == "" && !choice.All {
		days = s.storeZone(r.Context(), choice.Account)
	}
	if to == "" || from == "" {
		loc, err := ordersync.ParseZone(days)
		if err != nil {
			loc = time.UTC
		}
		now := s.cfg.Clock().In(loc)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		if to == "" {
			to = today.AddDate(0, 0, 1).Format(ordersync.DateLayout)
		}
		if from == "" {
			if end, err := ordersync.ParseDate(to); err == nil {
				from = end.AddDate(0, 0, -defaultTotalsDays).Format(ordersync.DateLayout)
			}
		}
	}
	return from, to, tz
}

func (s *Console) totalsPage(w http.ResponseWriter, r *http.Request) {
	choice, err := s.cfg.Stores.Choose(r, true)
	var ve *ordersync.ValidationError
	if errors.As(err, &ve) {
		view := &TotalsView{Stores: s.storeOptions(api.StoreChoice{Account: s.cfg.Stores.Default}, true), Errors: labelledAs(ve.Fields, totalsLabels)}
		s.page(w, r, http.StatusBadRequest, "totals.html", &Page{Title: "Daily totals", Data: view})
		return
	}
	from, to, tz := s.totalsParams(r, choice)
	view := &TotalsView{From: from, To: to, TZ: tz, Stores: s.storeOptions(choice, true), AllStores: choice.All}
	params, err := api.ParseDailyTotals(choice.Account, from, to, tz)
	if errors.As(err, &ve) {
		view.Errors = labelledAs(ve.Fields, totalsLabels)
		s.page(w, r, http.StatusBadRequest, "totals.html", &Page{Title: "Daily totals", Data: view})
		return
	}
	if err != nil {
		s.office.Fail(w, "daily totals", err, "")
		return
	}
	if view.Totals, err = api.ReadDailyTotals(r.Context(), s.cfg.Reports, choice, s.cfg.Stores.List(), params); err != nil {
		s.office.Fail(w, "daily totals", err, "")
		return
	}
	if loc, err := ordersync.ParseZone(view.Totals.TZ); err == nil {
		days := ordersync.ReportDays(params.From, params.To, loc)
		view.Zone = ordersync.ZoneLabel(loc, days[0].Start, days[len(days)-1].End)
		view.AsOf = asOf(view.Totals.AsOf, loc)
	}
	view.Charts = totalsCharts(params, view.Totals)
	query := url.Values{"from": {from}, "to": {to}, "account": {choice.Param()}}
	if tz != "" {
		query.Set("tz", tz)
	}
	view.CSV = "/console/totals.csv?" + query.Encode()
	view.Offset, _ = strconv.Atoi(r.URL.Query().Get("row"))
	view.Offset = min(max(0, view.Offset), len(view.Totals.Days))
	end := min(view.Offset+totalsTableRows, len(view.Totals.Days))
	for _, d := range view.Totals.Days[view.Offset:end] {
		view.Rows = append(view.Rows, totalsRow(d, choice.Account, view.Totals.TZ))
	}
	pageURL := func(row int) string {
		q := cloneValues(query)
		if row > 0 {
			q.Set("row", strconv.Itoa(row))
		}
		return "/console/totals?" + q.Encode()
	}
	if view.Offset > 0 {
		view.PrevURL = pageURL(max(0, view.Offset-totalsTableRows))
	}
	if end < len(view.Totals.Days) {
		view.NextURL = pageURL(end)
	}
	s.page(w, r, http.StatusOK, "totals.html", &Page{Title: "Daily totals", Data: view})
}

// totalsCharts draws one chart per currency of each day's paid total: the
// currencies are never summed together, so neither are their bars scaled
// together. Heights are proportions, so a float is fine here; the amounts
// shown stay the report's exact strings.
func totalsCharts(p ordersync.DailyTotalsParams, totals ordersync.DailyTotals) []TotalsChart {
	days := ordersync.ReportDays(p.From, p.To, time.UTC)
	index := make(map[string]int, len(days))
	for i, d := range days {
		index[d.Date] = i
	}
	type series struct {
		bars []TotalsBar
		max  *big.Rat
		top  string
	}
	var order []string
	byCurrency := map[string]*series{}
	for _, d := range totals.Days {
		// Several stores' charts of one currency stay apart too.
		key := d.Currency
		if d.Account != "" {
			key = d.Account + " " + d.Currency
		}
		sr := byCurrency[key]
		if sr == nil {
			sr = &series{bars: make([]TotalsBar, len(days)), max: new(big.Rat), top: "0"}
			for i, day := range days {
				sr.bars[i] = TotalsBar{Date: day.Date, Total: "0", X: i * (chartBar + chartGap), Y: chartHeight}
			}
			byCurrency[key], order = sr, append(order, key)
		}
		i, ok := index[d.Date]
		if !ok {
			continue
		}
		sr.bars[i].Total, sr.bars[i].Count = d.Paid.Total, d.Paid.Count
		if v, ok := new(big.Rat).SetString(d.Paid.Total); ok && v.Cmp(sr.max) > 0 {
			sr.max, sr.top = v, d.Paid.Total
		}
	}
	var out []TotalsChart
	for _, c := range order {
		sr := byCurrency[c]
		for i := range sr.bars {
			b := &sr.bars[i]
			v, ok := new(big.Rat).SetString(b.Total)
			if !ok || sr.max.Sign() == 0 || v.Sign() <= 0 {
				continue
			}
			f, _ := new(big.Rat).Quo(v, sr.max).Float64()
			b.Height = max(1, int(f*chartHeight+0.5))
			b.Y = chartHeight - b.Height
		}
		out = append(out, TotalsChart{Labelled: len(days) <= labelledBarsDays, Currency: c, Max: sr.top, Bars: sr.bars,
			Width: max(1, len(days)*(chartBar+chartGap)-chartGap), First: days[0].Date, Last: days[len(days)-1].Date})
	}
	return out
}

// totalsCSV streams the page's report as CSV, the columns of
// `ordersync report daily --csv`, by the console's session.
func (s *Console) totalsCSV(w http.ResponseWriter, r *http.Request) {
	choice, err := s.cfg.Stores.Choose(r, true)
	if err != nil {
		s.office.Fail(w, "daily totals", err, "")
		return
	}
	from, to, tz := s.totalsParams(r, choice)
	totals, ok := s.cfg.API.DailyTotalsFor(w, r, from, to, tz)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="daily-totals-%s-%s-%s.csv"`, api.StoreFileName(choice), from, to))
	w.Header().Set("Cache-Control", "no-store")
	if err := api.WriteDailyCSV(w, totals); err != nil {
		s.cfg.Logger.Warn("admin: write daily totals CSV", "err", err)
	}
}

// totalsLabels are the Daily totals form's labels where they differ from
// fieldLabels.
var totalsLabels = map[string]string{"to": "Before"}

// asOf is the instant indexed figures are current at, as the pages show
// it: in loc, with its offset; "" when the reader did not say.
func asOf(at time.Time, loc *time.Location) string {
	if at.IsZero() {
		return ""
	}
	return at.In(loc).Format("2006-01-02 15:04:05 -07:00")
}
