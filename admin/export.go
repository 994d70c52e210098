package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
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
	// defaultMaxExports is how many exports run at once unless configured:
	// each holds a database connection for a read at a time and a core
	// while it encodes.
	defaultMaxExports = 2
	// exportRetryAfter is the wait a refused export is told to take.
	exportRetryAfter = 10 * time.Second
	// exportBatchDeadline is how long one batch may take to reach the
	// client: each batch moves the connection's deadlines this far ahead,
	// so an export may outlast the server's write timeout while a stalled
	// client still frees its slot.
	exportBatchDeadline = time.Minute
)

// routeExports adds GET /v1/exports/{orders,order-lines,status-changes}.
func (s *Server) routeExports() {
	s.exportSlots = make(chan struct{}, s.cfg.MaxExports)
	for _, kind := range export.Kinds {
		s.mux.HandleFunc("GET /v1/exports/"+string(kind), when(s.cfg.Exports != nil, "exports", func(w http.ResponseWriter, r *http.Request) {
			s.export(w, r, kind)
		}))
	}
}

// export streams the export of kind that the query asks for: the orders
// the listing's filters select (account, status, since), in the format and
// profile asked, a batch of the mirror at a time. A failure after the first
// bytes went out cuts the connection, so the client sees an error instead
// of a file that merely looks whole.
func (s *Server) export(w http.ResponseWriter, r *http.Request, kind export.Kind) {
	// A bare ';' is no separator here: delimiter=; means what it says
	// (Go's own parsing drops a pair holding one).
	q, err := url.ParseQuery(strings.ReplaceAll(r.URL.RawQuery, ";", "%3B"))
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "the query is not valid: "+err.Error(), nil)
		return
	}
	filter := ordersync.OrderFilter{Account: s.cfg.Account}
	if a := q.Get("account"); a != "" {
		filter.Account = a
	}
	if filter.Statuses, err = ParseStatuses(q["status"]); err != nil {
		writeProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{"status": {err.Error()}})
		return
	}
	if v := q.Get("since"); v != "" {
		if filter.Since, err = ParseSince(v, time.Now()); err != nil {
			writeProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{"since": {err.Error()}})
			return
		}
	}
	opts, err := export.ParseSettings(export.Settings{Kind: string(kind), Format: q.Get("format"), Profile: q.Get("profile"),
		Delimiter: q.Get("delimiter"), Decimal: q.Get("decimal")})
	if err != nil {
		s.fail(w, "export", err, "")
		return
	}

	select {
	case s.exportSlots <- struct{}{}:
		defer func() { <-s.exportSlots }()
	default:
		w.Header().Set("Retry-After", fmt.Sprint(int(exportRetryAfter/time.Second)))
		writeProblem(w, http.StatusServiceUnavailable, fmt.Sprintf("%d exports are running, the most at once: try again later", cap(s.exportSlots)), nil)
		return
	}
	if opts.Location, err = export.Zone(r.Context(), s.cfg.Exports, filter.Account, q.Get("tz")); err != nil {
		s.fail(w, "export", err, "")
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
	h := w.Header()
	h.Set("Content-Type", contentType(opts))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fileName(filter.Account, opts, time.Now())}))
	h.Set("Ordersync-Time-Zone", opts.Location.String())
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	s.auditExport(r, filter, opts)

	start := time.Now()
	out := &sentWriter{w: w}
	rows, err := export.Run(r.Context(), s.cfg.Exports, filter, opts, s.cfg.ExportBatchSize, out, func(int) error {
		extend()
		return rc.Flush()
	})
	log := s.cfg.Logger.With("kind", string(kind), "account", filter.Account, "rows", rows, "duration", time.Since(start).Round(time.Millisecond))
	switch {
	case err == nil:
		log.Info("export finished")
	case r.Context().Err() != nil:
		log.Info("export cancelled: the client went away", "err", err)
		panic(http.ErrAbortHandler)
	case !out.sent:
		s.fail(w, "export", err, "")
	default:
		// The status and some rows are out: only cutting the connection
		// tells the client the file is not whole (a CSV has no trailer).
		log.Error("export failed midway: connection cut", "err", err)
		panic(http.ErrAbortHandler)
	}
}

// auditExport records who exported what: an export is an action on
// buyers' data. It is the one place an export is recorded.
func (s *Server) auditExport(r *http.Request, filter ordersync.OrderFilter, opts export.Options) {
	statuses := make([]string, len(filter.Statuses))
	for i, st := range filter.Statuses {
		statuses[i] = string(st)
	}
	attrs := []slog.Attr{
		slog.String("caller", s.caller(r)), slog.String("remote", r.RemoteAddr),
		slog.String("kind", string(opts.Kind)), slog.String("format", string(opts.Format)), slog.String("profile", string(opts.Profile)),
		slog.String("account", filter.Account), slog.String("status", strings.Join(statuses, ",")),
	}
	if !filter.Since.IsZero() {
		attrs = append(attrs, slog.Time("since", filter.Since))
	}
	s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "export started", attrs...)
}

// caller names who sent a request as far as the API knows: the bearer
// token by the first 12 hex digits of its SHA-256 (never the token), or
// loopback when the API runs without tokens.
func (s *Server) caller(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if len(s.cfg.Tokens) == 0 || !ok || token == "" {
		return "loopback (no admin tokens)"
	}
	sum := sha256.Sum256([]byte(token))
	return "token sha256:" + hex.EncodeToString(sum[:6])
}

func contentType(opts export.Options) string {
	if opts.Format == export.JSONL {
		return "application/jsonl; charset=utf-8"
	}
	return "text/csv; charset=utf-8; header=present"
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
