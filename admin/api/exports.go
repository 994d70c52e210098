package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/export"
)

// Limits of the export endpoints.
const (
	// DefaultMaxExports is how many exports run at once unless configured:
	// each holds a database connection for a read at a time and a core
	// while it encodes.
	DefaultMaxExports = 2
	// exportRetryAfter is the wait a refused export is told to take.
	exportRetryAfter = 10 * time.Second
	// exportBatchDeadline is how long one batch may take to reach the
	// client: each batch moves the connection's deadlines this far ahead,
	// so an export may outlast the server's write timeout while a stalled
	// client still frees its slot.
	exportBatchDeadline = time.Minute
)

// routeExports adds GET /v1/exports/{orders,order-lines,status-changes}.
func (h *Handlers) routeExports(mux Mux) {
	for _, kind := range export.Kinds {
		mux.HandleFunc("GET /v1/exports/"+string(kind), When(h.deps.Exports != nil, "exports", func(w http.ResponseWriter, r *http.Request) {
			h.export(w, r, kind)
		}))
	}
}

// exportPaging are the listing's query parameters that page rather than
// filter: an export is the whole view, so a listing's URL, its page
// included, exports every order its filter selects.
var exportPaging = []string{"cursor", "limit", "offset", "count"}

// export streams the export of kind that the query asks for: the orders
// the listing's filters select (ordersync.ParseOrderQuery, the same parameters as
// GET /v1/orders) in the listing's sort, in the format and profile asked,
// a batch of the mirror at a time. A failure after the first bytes went
// out cuts the connection, so the client sees an error instead of a file
// that merely looks whole. Every export, refused or not, is recorded in
// the audit trail with its filter and how it ended: it reads buyers' data.
func (h *Handlers) export(w http.ResponseWriter, r *http.Request, kind export.Kind) {
	action := "export." + string(kind)
	object, outcome := ordersync.Clip(r.URL.RawQuery, 500), ""
	defer func() { h.office.Record(r, action, object, outcome) }()
	refuse := func(status int, title string, fields map[string][]string) {
		outcome = ordersync.OutcomeOfStatus(status)
		WriteProblem(w, status, title, fields)
	}

	// A bare ';' is no separator here: delimiter=; means what it says
	// (Go's own parsing drops a pair holding one).
	q, err := url.ParseQuery(strings.ReplaceAll(r.URL.RawQuery, ";", "%3B"))
	if err != nil {
		refuse(http.StatusBadRequest, "the query is not valid: "+err.Error(), nil)
		return
	}
	choice, err := ChooseStore(q.Get("account"), h.deps.Stores.Default, h.deps.Stores.List(), true)
	if err != nil {
		var ve *ordersync.ValidationError
		errors.As(err, &ve)
		refuse(http.StatusBadRequest, ve.Title, ve.Fields)
		return
	}
	filterQuery := maps.Clone(q)
	for _, p := range exportPaging {
		delete(filterQuery, p)
	}
	// Both parsers run, so one answer names every bad parameter.
	fields := map[string][]string{}
	filter, err := OrderFilterOf(filterQuery, time.Now())
	var qe *ordersync.QueryError
	if errors.As(err, &qe) {
		maps.Copy(fields, qe.Fields)
	}
	filter.Account = choice.Account
	opts, err := export.ParseSettings(export.Settings{Kind: string(kind), Format: q.Get("format"), Profile: q.Get("profile"),
		Delimiter: q.Get("delimiter"), Decimal: q.Get("decimal")})
	var ve *ordersync.ValidationError
	if errors.As(err, &ve) {
		for k, v := range ve.Fields {
			fields[k] = append(fields[k], v...)
		}
	}
	if len(fields) > 0 {
		refuse(http.StatusBadRequest, "invalid query", fields)
		return
	}
	object = ordersync.Clip(FilterQuery(filter), 500)
	h.SendExport(w, r, ExportFile{Filter: filter, Options: opts, TZ: q.Get("tz"),
		Name: func(*time.Location) string { return fileName(StoreFileName(choice), opts, time.Now()) }}, &outcome)
}

// ExportFile is an export read and checked, ready to send.
type ExportFile struct {
	Filter  ordersync.OrderFilter
	Options export.Options
	// TZ is the zone asked for, "" for the store's (export.Zone).
	TZ string
	// Name is the file's name, given the zone its times are in.
	Name func(*time.Location) string
}

// SendExport streams an export to the client within the limit of exports
// at once, and sets its outcome for the audit trail, which the caller
// records in a deferred call, refused or not: an export cut midway ends
// the handler by panicking with http.ErrAbortHandler.
func (h *Handlers) SendExport(w http.ResponseWriter, r *http.Request, f ExportFile, outcome *string) {
	filter, opts := f.Filter, f.Options
	select {
	case h.exportSlots <- struct{}{}:
		defer func() { <-h.exportSlots }()
	default:
		w.Header().Set("Retry-After", fmt.Sprint(int(exportRetryAfter/time.Second)))
		WriteProblem(w, http.StatusServiceUnavailable, fmt.Sprintf("%d exports are running, the most at once: try again later", cap(h.exportSlots)), nil)
		*outcome = ordersync.OutcomeOfStatus(http.StatusServiceUnavailable)
		return
	}
	var err error
	if opts.Location, err = export.Zone(r.Context(), h.deps.Exports, filter.Account, f.TZ); err != nil {
		*outcome = ordersync.OutcomeOfError(err)
		h.office.Fail(w, "export", err, "")
		return
	}

	rc := http.NewResponseController(w)
	extend := func() {
		// ErrNotSupported leaves the server's own timeouts in force.
		deadline := time.Now().Add(exportBatchDeadline)
		_ = rc.SetWriteDeadline(deadline)
		_ = rc.SetReadDeadline(deadline)
	}
	extend()
	hdr := w.Header()
	hdr.Set("Content-Type", contentType(opts))
	hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name(opts.Location)}))
	hdr.Set("Ordersync-Time-Zone", opts.Location.String())
	if filter.FromIndexer() {
		// A search by name or a transition range reads the indexer's read
		// side: like the listing, the file says how current it is, in headers because a CSV has
		// no place for them a spreadsheet would not take for a row.
		asOf, behind, err := h.SearchAsOf(r.Context(), filter)
		if err != nil {
			*outcome = ordersync.OutcomeOfError(err)
			h.office.Fail(w, "export", err, "")
			return
		}
		hdr.Set("Ordersync-As-Of", asOf.UTC().Format(time.RFC3339))
		hdr.Set("Ordersync-Behind", fmt.Sprint(behind))
	}
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")

	start := time.Now()
	out := &sentWriter{w: w}
	rows, err := export.Run(r.Context(), h.deps.Exports, filter, opts, h.deps.ExportBatchSize, out, func(int) error {
		extend()
		return rc.Flush()
	})
	log := h.deps.Logger.With("actor", h.office.Actor(r), "kind", string(opts.Kind), "account", filter.Account, "rows", rows,
		"duration", time.Since(start).Round(time.Millisecond))
	*outcome = ordersync.OutcomeOfError(err)
	switch {
	case err == nil:
		log.Info("export finished")
	case r.Context().Err() != nil:
		*outcome = ordersync.OutcomeCancelled
		log.Info("export cancelled: the client went away", "err", err)
		panic(http.ErrAbortHandler)
	case !out.sent:
		h.office.Fail(w, "export", err, "")
	default:
		// The status and some rows are out: only cutting the connection
		// tells the client the file is not whole (a CSV has no trailer).
		log.Error("export failed midway: connection cut", "err", err)
		panic(http.ErrAbortHandler)
	}
}

// SearchAsOf says how current the name words a search (filter.Q) matches
// are, as the listing of the same filter does.
func (h *Handlers) SearchAsOf(ctx context.Context, filter ordersync.OrderFilter) (time.Time, bool, error) {
	filter.Limit, filter.After, filter.Offset, filter.Count = 1, nil, 0, false
	page, err := h.deps.Orders.ListOrders(ctx, filter)
	return page.AsOf, page.Behind, err
}

func contentType(opts export.Options) string {
	if opts.Format == export.JSONL {
		return "application/jsonl; charset=utf-8"
	}
	return "text/csv; charset=utf-8; header=present"
}

// StoreFileName is the store as an export's file name says it.
func StoreFileName(c StoreChoice) string {
	if c.All {
		return "all-stores"
	}
	return c.Account
}

// fileName names an export's file: what, whose and when.
func fileName(account string, opts export.Options, now time.Time) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, account)
	return fmt.Sprintf("ordersync-%s-%s-%s.%s", safe, opts.Kind, now.UTC().Format("20060102T150405Z"), opts.Format)
}

// sentWriter tells whether anything reached the client.
type sentWriter struct {
	w    http.ResponseWriter
	sent bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	s.sent = s.sent || len(p) > 0
	return s.w.Write(p)
}
