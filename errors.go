package ordersync

import (
	"errors"
	"fmt"
	"time"
)

// Errors the adapters translate their own failures into. Callers test them
// with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// UpstreamErrorKind classifies a failed call to the payment link service by
// what a caller should do about it.
type UpstreamErrorKind string

// The kinds of upstream failure.
const (
	// UpstreamValidation: 400, the request is wrong; never retry it.
	UpstreamValidation UpstreamErrorKind = "validation"
	// UpstreamUnauthorized: 401/403, the secret key is wrong; pause, alert.
	UpstreamUnauthorized UpstreamErrorKind = "unauthorized"
	// UpstreamNotFound: 404, no such order code; never retry it.
	UpstreamNotFound UpstreamErrorKind = "not_found"
	// UpstreamRateLimited: 429; retry after RetryAfter.
	UpstreamRateLimited UpstreamErrorKind = "rate_limited"
	// UpstreamServer: 5xx; retry with backoff.
	UpstreamServer UpstreamErrorKind = "server"
	// UpstreamTransport: network failure or timeout; retry with backoff.
	UpstreamTransport UpstreamErrorKind = "transport"
	// UpstreamProtocol: a 2xx whose body cannot be understood, or a status
	// the interface does not describe; retrying will not help.
	UpstreamProtocol UpstreamErrorKind = "protocol"
)

// UpstreamError is a failed call to the payment link service.
type UpstreamError struct {
	Kind       UpstreamErrorKind
	Op         string // "get order yY7Mcnd", "create payment link"
	StatusCode int    // 0 for transport failures
	// RetryAfter is the wait the service asked for (429, sometimes 503), or 0.
	RetryAfter time.Duration
	// ProblemType and Title come from the problem body when there is one.
	ProblemType string
	Title       string
	// Validation holds the offending fields of a 400.
	Validation *ValidationError
	Err        error
}

func (e *UpstreamError) Error() string {
	msg := e.Op + ": "
	switch {
	case e.Validation != nil:
		msg += e.Validation.Error()
	case e.StatusCode != 0:
		msg += fmt.Sprintf("HTTP %d %s", e.StatusCode, e.Kind)
		if e.Title != "" {
			msg += ": " + e.Title
		}
	default:
		msg += string(e.Kind)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *UpstreamError) Unwrap() []error {
	errs := []error{}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Validation != nil {
		errs = append(errs, e.Validation)
	}
	if e.Kind == UpstreamNotFound {
		errs = append(errs, ErrNotFound)
	}
	return errs
}

// Retryable reports whether the same call may succeed later without anything
// changing on ordersync's side.
func (e *UpstreamError) Retryable() bool {
	switch e.Kind {
	case UpstreamRateLimited, UpstreamServer, UpstreamTransport:
		return true
	}
	return false
}

// UpstreamErrorKindOf returns the kind of an upstream failure anywhere in
// err's chain, or "" when err is not one.
func UpstreamErrorKindOf(err error) UpstreamErrorKind {
	var ue *UpstreamError
	if errors.As(err, &ue) {
		return ue.Kind
	}
	return ""
}
