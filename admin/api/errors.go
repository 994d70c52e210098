package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
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
// API answers them with; every handler answers its errors through
// WriteError,
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

// StatusOf is the status the API answers err with, by the table; false
// when no row matches err (a 500).
func StatusOf(err error) (int, bool) {
	row, ok := rowFor(err)
	return row.status, ok
}

// WriteError answers the error of op by its row in the table; notFound,
// when given, is the title of a 404 (what was not found, in the caller's
// words). An error no row matches is a 500 titled by op, and WriteError
// returns false so that the caller logs it.
func WriteError(w http.ResponseWriter, op string, err error, notFound string) bool {
	row, ok := rowFor(err)
	if !ok {
		WriteProblem(w, http.StatusInternalServerError, op+" failed", nil)
		return false
	}
	title, fields := err.Error(), map[string][]string(nil)
	if row.problem != nil {
		title, fields = row.problem(err, notFound)
	}
	var ue *ordersync.UpstreamError
	if row.retryAfter && errors.As(err, &ue) && ue.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((ue.RetryAfter+time.Second-1)/time.Second)))
	}
	WriteProblem(w, row.status, title, fields)
	return true
}
