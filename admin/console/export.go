package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/export"
)

// The console's Export page: a form for the export endpoints' choices in
// the words of a person (a store, days by a preset, a zone, a format), its
// default the spreadsheet-safe profile; and its download, which sends the
// same file GET /v1/exports/… would, within the same limit, recorded the
// same way in the audit trail. A download changes nothing, so it is a GET.

// routeExport adds the Export page and its download.
func (s *Console) routeExport(mux Mux) {
	mux.HandleFunc("GET /console/export", api.When(s.cfg.Exports != nil, "exports", s.exportPage))
	mux.HandleFunc("GET /console/export/download", api.When(s.cfg.Exports != nil, "exports", s.exportDownload))
}

// Day presets of the Export form, in the form's order; "" is the From and
// To fields (empty: every day).
// Short is the Orders page's link's words.
var dayPresets = []struct{ Value, Label, Short string }{
	{"", "From and to below (empty: every day)", ""},
	{"today", "Today", "Today"},
	{"yesterday", "Yesterday", "Yesterday"},
	{"last-7-days", "Last 7 days (today included)", "Last 7 days"},
	{"this-month", "This month (up to today)", "This month"},
	{"last-month", "Last month", "Last month"},
}

// Export formats of the form: the spreadsheet-safe CSV first, the default.
var exportFormats = []struct{ Value, Label string }{
	{"spreadsheet", "CSV for spreadsheets (Excel, LibreOffice, Numbers): safe to open"},
	{"csv", "CSV, every value as mirrored (for programs)"},
	{"jsonl", "JSON Lines (for programs)"},
}

// dayFields are the times the form's days may select by: each the name of
// the listing's range (createdFrom/createdTo, …), with its label.
var dayFields = []struct{ Value, Label string }{
	{"created", "Created"}, {"paid", "Paid"}, {"cancelled", "Cancelled"}, {"finalized", "Finalized"}, {"reversed", "Reversed"},
}

// exportFormParams are the form's own fields; every other parameter of the
// listing a link brings along travels in hidden fields, so the file holds
// what the page it came from listed.
var exportFormParams = []string{"kind", "account", "status", "tz", "days", "by", "from", "to", "format"}

// exportLabels name the form's fields as the page shows them, for its
// error messages.
var exportLabels = map[string]string{"kind": "Kind", "account": "Store", "status": "Status", "tz": "Zone",
	"days": "Days", "by": "Days by", "from": "From", "to": "To", "format": "Format",
	"q": "Search", "currency": "Currency", "minTotal": "Total from", "maxTotal": "Total up to", "sort": "Sort"}

// ExportView is the Export page.
type ExportView struct {
	Kind, Days, By, From, To, TZ, Format string
	Kinds                                []export.Kind
	Formats, ByFields                    []struct{ Value, Label string }
	Presets                              []struct{ Value, Label, Short string }
	Stores                               []StoreOption
	Zones                                []ZoneOption
	Statuses                             []ordersync.Status
	Collected                            string
	// Status is the status filter as one comma list.
	Status string
	// Hidden are the listing's other parameters the link brought.
	Hidden url.Values
	// Zone names the zone the days and times are in, with its offset.
	Zone   string
	Errors map[string][]string
	// Orders is the Orders page of the same filter.
	Orders string
	// Behind says a search's match by name is as of AsOf, not current,
	// as on Orders; the file's headers say the same.
	Behind bool
	AsOf   string
}

// ZoneOption is one entry of the Export form's zone selector.
type ZoneOption struct {
	Value, Label string
	Selected     bool
}

// exportForm reads the Export form (or a link to it) into its view. A link
// from Orders or Daily totals carries the listing's day range
// (paidFrom=2026-11-26&paidTo=2026-11-27): it becomes Days by Paid, from
// the first day to the last.
func (s *Console) exportForm(r *http.Request) *ExportView {
	q := r.URL.Query()
	v := &ExportView{Kind: q.Get("kind"), Days: q.Get("days"), By: q.Get("by"), From: q.Get("from"), To: q.Get("to"),
		TZ: q.Get("tz"), Format: q.Get("format"), Kinds: export.Kinds, Presets: dayPresets, Formats: exportFormats,
		ByFields: dayFields, Statuses: ordersync.Statuses, Collected: ordersync.StatusGroupCollected,
		Status: strings.Join(q["status"], ","), Hidden: url.Values{}}
	if v.Kind == "" {
		v.Kind = string(export.Orders)
	}
	if v.Format == "" {
		v.Format = exportFormats[0].Value
	}
	for k, vs := range q {
		if !slices.Contains(exportFormParams, k) && slices.Contains(ordersync.OrderQueryParams, k) {
			v.Hidden[k] = vs
		}
	}
	for _, p := range []string{"cursor", "limit", "offset", "count"} {
		v.Hidden.Del(p)
	}
	if v.By == "" && v.From == "" && v.To == "" {
		for _, f := range dayFields {
			from, to := q.Get(f.Value+"From"), q.Get(f.Value+"To")
			first, errFrom := ordersync.ParseDate(from)
			end, errTo := ordersync.ParseDate(to)
			if from == "" || errFrom != nil || (to != "" && errTo != nil) {
				continue
			}
			v.By, v.From = f.Value, first.Format(ordersync.DateLayout)
			if to != "" {
				v.To = end.AddDate(0, 0, -1).Format(ordersync.DateLayout)
			}
			v.Hidden.Del(f.Value + "From")
			v.Hidden.Del(f.Value + "To")
			break
		}
	}
	if v.By == "" {
		v.By = dayFields[0].Value
	}
	return v
}

// exportRequest is what the form asks for, read: the listing's query the
// export runs, the export's options, the days and the zone.
type exportRequest struct {
	choice   api.StoreChoice
	query    url.Values
	opts     export.Options
	loc      *time.Location
	from, to time.Time // the days, [from, to); zero: every day
}

// readExportForm checks the form and turns it into the listing's query,
// naming each bad field by its label on the page.
func (s *Console) readExportForm(r *http.Request, v *ExportView) (exportRequest, map[string][]string) {
	errs := map[string][]string{}
	fail := func(field, msg string) {
		label := exportLabels[field]
		if label == "" {
			label = field
		}
		errs[label] = append(errs[label], msg)
	}
	var req exportRequest
	choice, err := s.cfg.Stores.Choose(r, true)
	var ve *ordersync.ValidationError
	if errors.As(err, &ve) {
		for _, m := range ve.Fields["account"] {
			fail("account", m)
		}
		return req, errs
	}
	req.choice = choice
	req.loc = time.UTC
	switch {
	case v.TZ != "":
		if req.loc, err = ordersync.ParseZone(v.TZ); err != nil {
			fail("tz", err.Error())
			req.loc = time.UTC
		}
	case !choice.All:
		if loc, err := ordersync.ParseZone(s.storeZone(r.Context(), choice.Account)); err == nil {
			req.loc = loc
		}
	}
	q := cloneValues(v.Hidden)
	q.Set("account", choice.Param())
	q.Set("tz", req.loc.String())
	if v.Status != "" {
		q.Set("status", v.Status)
	}
	if !slices.ContainsFunc(dayFields, func(f struct{ Value, Label string }) bool { return f.Value == v.By }) {
		fail("by", "want created, paid, cancelled, finalized or reversed")
	}
	req.from, req.to = s.exportDays(v, req.loc, fail)
	if !req.from.IsZero() {
		q.Set(v.By+"From", req.from.Format(ordersync.DateLayout))
	}
	if !req.to.IsZero() {
		q.Set(v.By+"To", req.to.Format(ordersync.DateLayout))
	}
	set := export.Settings{Kind: v.Kind, Format: v.Format}
	switch v.Format {
	case "spreadsheet":
		set.Format, set.Profile = string(export.CSV), string(export.Excel)
	case "csv", "jsonl":
	default:
		fail("format", "want spreadsheet, csv or jsonl")
		set.Format = ""
	}
	req.opts, err = export.ParseSettings(set)
	if errors.As(err, &ve) {
		for k, ms := range ve.Fields {
			for _, m := range ms {
				fail(k, m)
			}
		}
	}
	_, err = api.OrderFilterOf(q, s.cfg.Clock())
	var qe *ordersync.QueryError
	if errors.As(err, &qe) {
		for k, ms := range qe.Fields {
			if strings.HasSuffix(k, "From") || strings.HasSuffix(k, "To") {
				k = "days"
			}
			for _, m := range ms {
				fail(k, m)
			}
		}
	}
	req.query = q
	req.opts.Location, req.opts.ZoneFrom, req.opts.ZoneTo = req.loc, req.from, req.to
	return req, errs
}

// presetDays are the days of a day preset (dayPresets), [from, to) in
// loc, counted from now's day there; false for no such preset.
func presetDays(preset string, now time.Time, loc *time.Location) (from, to time.Time, ok bool) {
	now = now.In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
	switch preset {
	case "today":
		return today, today.AddDate(0, 0, 1), true
	case "yesterday":
		return today.AddDate(0, 0, -1), today, true
	case "last-7-days":
		return today.AddDate(0, 0, -6), today.AddDate(0, 0, 1), true
	case "this-month":
		return month, today.AddDate(0, 0, 1), true
	case "last-month":
		return month.AddDate(0, -1, 0), month, true
	}
	return time.Time{}, time.Time{}, false
}

// exportDays are the days the form chose, [from, to) in loc: a preset
// counted from today in loc, or From to To (each day whole, To included).
func (s *Console) exportDays(v *ExportView, loc *time.Location, fail func(field, msg string)) (from, to time.Time) {
	if v.Days != "" {
		from, to, ok := presetDays(v.Days, s.cfg.Clock(), loc)
		if !ok {
			fail("days", "want today, yesterday, last-7-days, this-month, last-month, or none for From and To")
		}
		return from, to
	}
	day := func(field, value string) time.Time {
		if value == "" {
			return time.Time{}
		}
		d, err := ordersync.ParseDate(value)
		if err != nil {
			fail(field, "\""+ordersync.Clip(value, 32)+"\" is not a day: want YYYY-MM-DD")
			return time.Time{}
		}
		return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
	}
	from, to = day("from", v.From), day("to", v.To)
	if !to.IsZero() {
		to = to.AddDate(0, 0, 1)
		if !from.IsZero() && !to.After(from) {
			fail("to", "is before From: want the last day at or after the first")
		}
	}
	return from, to
}

// exportFileName names a console export by what it holds: kind, store,
// days and zone (orders_store-md_2026-11-26_Europe-Madrid.csv).
func exportFileName(req exportRequest) string {
	store := "all-stores"
	if !req.choice.All {
		store = "store-" + req.choice.Account
	}
	days := "all-days"
	if !req.from.IsZero() || !req.to.IsZero() {
		first, last := "start", "today"
		if !req.from.IsZero() {
			first = req.from.Format(ordersync.DateLayout)
		}
		if !req.to.IsZero() {
			last = req.to.AddDate(0, 0, -1).Format(ordersync.DateLayout)
		}
		days = first
		if last != first {
			days += "_" + last
		}
	}
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, string(req.opts.Kind)+"_"+store+"_"+days+"_"+req.loc.String())
	return safe + "." + string(req.opts.Format)
}

func (s *Console) exportPage(w http.ResponseWriter, r *http.Request) {
	v := s.exportForm(r)
	req, errs := s.readExportForm(r, v)
	status := http.StatusOK
	if len(errs) > 0 {
		v.Errors, status = errs, http.StatusBadRequest
	}
	s.fillExportView(r, v, req)
	s.page(w, r, status, "export.html", &Page{Title: "Export", Data: v})
}

// fillExportView adds the selectors' entries and what the page says of the
// choice: the zone with its offset over the days, and the same orders'
// listing.
func (s *Console) fillExportView(r *http.Request, v *ExportView, req exportRequest) {
	v.Stores = s.storeOptions(req.choice, true)
	loc := req.loc
	if loc == nil {
		loc = time.UTC
	}
	from, to := req.from, req.to
	if from.IsZero() || to.IsZero() {
		from = s.cfg.Clock()
		to = from
	}
	v.Zone = ordersync.ZoneLabel(loc, from, to)
	now := s.cfg.Clock()
	storeZone := "UTC, for all stores"
	if !req.choice.All {
		if z, err := ordersync.ParseZone(s.storeZone(r.Context(), req.choice.Account)); err == nil {
			storeZone = ordersync.ZoneLabel(z, now, now)
		} else {
			storeZone = "UTC: the store names no zone"
		}
	}
	v.Zones = []ZoneOption{{Value: "", Label: "The store's zone: " + storeZone, Selected: v.TZ == ""}}
	seen := map[string]bool{}
	add := func(name string) {
		z, err := ordersync.ParseZone(name)
		if err != nil || seen[z.String()] {
			return
		}
		seen[z.String()] = true
		v.Zones = append(v.Zones, ZoneOption{Value: z.String(), Label: ordersync.ZoneLabel(z, now, now),
			Selected: v.TZ != "" && strings.EqualFold(v.TZ, z.String())})
	}
	add("UTC")
	for _, st := range s.cfg.Stores.List() {
		add(s.storeZone(r.Context(), st))
	}
	if v.TZ != "" {
		add(v.TZ)
	}
	if req.query != nil {
		list := cloneValues(req.query)
		list.Set("count", "exact")
		v.Orders = "/console/orders?" + list.Encode()
		if f, err := api.OrderFilterOf(req.query, now); err == nil && f.FromIndexer() {
			f.Account = req.choice.Account
			if at, behind, err := s.cfg.API.SearchAsOf(r.Context(), f); err == nil {
				v.Behind, v.AsOf = behind, at.UTC().Format("2006-01-02 15:04:05 UTC")
			}
		}
	}
}

// exportDownload sends the file the form asks for; a form that cannot be
// read is the page again, naming what is wrong. Like the API's exports,
// every download, refused or not, is in the audit trail.
func (s *Console) exportDownload(w http.ResponseWriter, r *http.Request) {
	v := s.exportForm(r)
	kind := export.Kind(v.Kind)
	if !slices.Contains(export.Kinds, kind) {
		kind = "unknown"
	}
	action := "export." + string(kind)
	object, outcome := ordersync.Clip(r.URL.RawQuery, 500), ""
	defer func() { s.office.Record(r, action, object, outcome) }()
	req, errs := s.readExportForm(r, v)
	if len(errs) > 0 {
		outcome = ordersync.OutcomeOfStatus(http.StatusBadRequest)
		v.Errors = errs
		s.fillExportView(r, v, req)
		s.page(w, r, http.StatusBadRequest, "export.html", &Page{Title: "Export", Data: v})
		return
	}
	filter, err := api.OrderFilterOf(req.query, s.cfg.Clock())
	if err != nil {
		// readExportForm parsed the same query.
		outcome = ordersync.OutcomeOfError(err)
		s.office.Fail(w, "export", err, "")
		return
	}
	filter.Account = req.choice.Account
	object = ordersync.Clip(api.FilterQuery(filter), 500)
	s.cfg.API.SendExport(w, r, api.ExportFile{Filter: filter, Options: req.opts, TZ: req.loc.String(),
		Name: func(*time.Location) string { return exportFileName(req) }}, &outcome)
}

// exportLink is the Export page for the listing's query q: the same
// orders, the same days.
func exportLink(q url.Values) string {
	out := url.Values{}
	for k, vs := range q {
		if slices.Contains(ordersync.OrderQueryParams, k) || k == "account" {
			out[k] = slices.Clone(vs)
		}
	}
	for _, p := range []string{"cursor", "limit", "offset", "count"} {
		out.Del(p)
	}
	return "/console/export?" + out.Encode()
}
