package admin

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/delivery"
)

// errorRow is one line of the table from errors to answers: the errors it
// matches, the status they are answered with, and, for the rows whose
// answer says more than the error's text, how the problem is written.
type errorRow struct {
	name   string
	match  func(error) bool
	status int
	// problem gives the answer's title and fields; nil means the error's
	// text as the title.
	problem func(err error, notFound string) (string, map[string][]string)
	// retryAfter passes on the wait the upstream asked for.
	retryAfter bool
}

// errorTable is the one table from the domain's errors to the statuses the
// API answers them with; every handler answers its errors through fail,
// which takes the first row that matches. The order matters where one error
// matches two rows: an upstream 400 carries its ValidationError and an
// upstream 404 wraps ErrNotFound, so those rows come before the upstream's
// own; anything no row matches is a 500.
var errorTable = []errorRow{
	{name: "invalid query", match: isQuery, status: http.StatusBadRequest, problem: queryProblem},
	{name: "validation", match: isValidation, status: http.StatusBadRequest, problem: validationProblem},
	{name: "not found", match: is(ordersync.ErrNotFound), status: http.StatusNotFound, problem: notFoundProblem},
	{name: "unknown account", match: is(ordersync.ErrUnknownAccount), status: http.StatusNotFound},
	{name: "upstream unavailable", match: isUpstream(true), status: http.StatusServiceUnavailable, retryAfter: true},
	{name: "upstream failed", match: isUpstream(false), status: http.StatusBadGateway},
	{name: "invalid endpoint", match: is(ordersync.ErrInvalidEndpoint), status: http.StatusBadRequest},
	{name: "invalid secret", match: is(delivery.ErrInvalidSecret), status: http.StatusBadRequest},
	{name: "managed by config", match: is(ordersync.ErrManagedByConfig), status: http.StatusConflict},
	{name: "endpoint disabled", match: is(ordersync.ErrEndpointDisabled), status: http.StatusConflict},
	{name: "conflict", match: is(ordersync.ErrConflict), status: http.StatusConflict},
}

// rowFor is the row that answers err, or false when none does.
func rowFor(err error) (errorRow, bool) {
	for _, row := range errorTable {
		if row.match(err) {
			return row, true
		}
	}
	return errorRow{}, false
}

// fail answers the error of op by its row in errorTable; notFound, when
// given, is the title of a 404 (what was not found, in the caller's words).
// An error no row matches is a 500, logged.
func (s *Server) fail(w http.ResponseWriter, op string, err error, notFound string) {
	row, ok := rowFor(err)
	if !ok {
		s.quiet.Log(slog.LevelError, "api "+op, "admin API", "op", op, "err", err)
		writeProblem(w, http.StatusInternalServerError, op+" failed", nil)
		return
	}
	title, fields := err.Error(), map[string][]string(nil)
	if row.problem != nil {
		title, fields = row.problem(err, notFound)
	}
	var ue *ordersync.UpstreamError
	if row.retryAfter && errors.As(err, &ue) && ue.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((ue.RetryAfter+time.Second-1)/time.Second)))
	}
	writeProblem(w, row.status, title, fields)
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func isValidation(err error) bool {
	var ve *ordersync.ValidationError
	return errors.As(err, &ve)
}

func isQuery(err error) bool {
	var qe *ordersync.QueryError
	return errors.As(err, &qe)
}

// queryProblem names each bad parameter of a listing's query.
func queryProblem(err error, _ string) (string, map[string][]string) {
	var qe *ordersync.QueryError
	errors.As(err, &qe)
	return "invalid query", qe.Fields
}

// validationProblem answers a refused request with the refusal's own title
// and fields, as the payment link service does.
func validationProblem(err error, _ string) (string, map[string][]string) {
	var ve *ordersync.ValidationError
	errors.As(err, &ve)
	return ve.Title, ve.Fields
}

func notFoundProblem(err error, notFound string) (string, map[string][]string) {
	if notFound != "" {
		return notFound, nil
	}
	return err.Error(), nil
}

// isUpstream matches the upstream's failures that may (retryable) or may
// not succeed later.
func isUpstream(retryable bool) func(error) bool {
	return func(err error) bool {
		var ue *ordersync.UpstreamError
		return errors.As(err, &ue) && ue.Retryable() == retryable
	}
}

// when is h where the process has what h needs (on), and otherwise a 501
// naming the feature: the one guard for the parts a process's role may
// lack.
func when(on bool, feature string, h http.HandlerFunc) http.HandlerFunc {
	if on {
		return h
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		writeProblem(w, http.StatusNotImplemented, feature+" is not enabled in this process", nil)
	}
}

// maxRequestBody bounds what the API reads from a client.
const maxRequestBody = 1 << 20

func decodeBody(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err := dec.Decode(dst); err != nil {
		writeProblem(w, http.StatusBadRequest, "the body is not valid JSON for this request: "+err.Error(), nil)
		return false
	}
	return true
}

func writeProblem(w http.ResponseWriter, status int, title string, fields map[string][]string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Problem{Type: "about:blank", Title: title, Status: status, Errors: fields})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
