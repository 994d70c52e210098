package admin

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// errorStatuses is the one table from the domain's errors to the statuses
// the API answers them with; fail consults it after the errors that carry
// more than a status (validation, the upstream's).
var errorStatuses = []struct {
	err    error
	status int
}{
	{ordersync.ErrNotFound, http.StatusNotFound},
	{ordersync.ErrUnknownAccount, http.StatusNotFound},
	{ordersync.ErrInvalidEndpoint, http.StatusBadRequest},
	{delivery.ErrInvalidSecret, http.StatusBadRequest},
	{ordersync.ErrManagedByConfig, http.StatusConflict},
	{ordersync.ErrEndpointDisabled, http.StatusConflict},
	{ordersync.ErrConflict, http.StatusConflict},
}

// fail answers the error of op: a request the service (or ordersync for
// it) refused is 400 with its fields; the upstream unavailable, 503 with
// the wait it asked for; another upstream failure, 502; a domain error, its
// status from errorStatuses, a 404 titled notFound when one is given; any
// other error, 500, logged.
func (s *Server) fail(w http.ResponseWriter, op string, err error, notFound string) {
	var ve *ordersync.ValidationError
	var ue *ordersync.UpstreamError
	switch {
	case errors.As(err, &ve):
		writeProblem(w, http.StatusBadRequest, ve.Title, ve.Fields)
		return
	case errors.Is(err, ordersync.ErrNotFound) && notFound != "":
		writeProblem(w, http.StatusNotFound, notFound, nil)
		return
	case errors.Is(err, ordersync.ErrNotFound):
		writeProblem(w, http.StatusNotFound, err.Error(), nil)
		return
	case errors.As(err, &ue) && ue.Retryable():
		if ue.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((ue.RetryAfter+time.Second-1)/time.Second)))
		}
		writeProblem(w, http.StatusServiceUnavailable, err.Error(), nil)
		return
	case errors.As(err, &ue):
		writeProblem(w, http.StatusBadGateway, err.Error(), nil)
		return
	}
	for _, e := range errorStatuses {
		if errors.Is(err, e.err) {
			writeProblem(w, e.status, err.Error(), nil)
			return
		}
	}
	s.internal(w, op, err)
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
