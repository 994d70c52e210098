package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/ordersync/ordersync"
)

// Causes of an OutageError, tested with errors.Is.
var (
	// ErrBreakerOpen: the circuit breaker is open after a run of transient
	// failures; no request was sent.
	ErrBreakerOpen = errors.New("upstream circuit breaker open")
	// ErrCredentialsRejected: the service refused the secret key (401/403);
	// fetching is paused until a probe succeeds.
	ErrCredentialsRejected = errors.New("upstream rejected the credentials, fetching paused")
	// ErrRetriesExhausted: transient failures (5xx, 429, network) outlasted
	// the retry budget of one fetch.
	ErrRetriesExhausted = errors.New("upstream retries exhausted")
	// ErrRateLimited: the upstream asked to wait (Retry-After) and the wait
	// has not passed; an interactive request was not sent.
	ErrRateLimited = errors.New("upstream asked to wait (Retry-After)")
)

// OutageError is a fetch that failed because the upstream is unavailable as a
// whole, not because of the order asked for. Callers retry later and never
// dead-letter for it.
type OutageError struct {
	Op string
	// Cause is ErrBreakerOpen, ErrCredentialsRejected, ErrRetriesExhausted
	// or ErrRateLimited.
	Cause error
	// Wait is how long the upstream is expected to stay unavailable: the
	// rest of the breaker's open period, the time to the next credentials
	// probe, or a Retry-After. Zero when unknown.
	Wait time.Duration
	// Err is the last upstream failure, when there was one.
	Err error
}

func (e *OutageError) Error() string {
	msg := e.Op + ": " + e.Cause.Error()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *OutageError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Cause}
	}
	return []error{e.Cause, e.Err}
}

// IsOutage reports whether err means the upstream is unavailable (breaker
// open, credentials rejected, transient failures outlasting the retries):
// retry later, do not dead-letter.
func IsOutage(err error) bool {
	var oe *OutageError
	return errors.As(err, &oe)
}

// OutageWait returns how long the outage in err is expected to last, or 0.
func OutageWait(err error) time.Duration {
	var oe *OutageError
	if errors.As(err, &oe) {
		return oe.Wait
	}
	return 0
}

// IsPermanent reports whether err is a failure that retrying will not fix:
// the order does not exist (404), or the service refused or garbled the
// answer (400, protocol).
func IsPermanent(err error) bool {
	if IsOutage(err) {
		return false
	}
	if errors.Is(err, ErrUnknownAccount) {
		return true
	}
	switch ordersync.UpstreamErrorKindOf(err) {
	case ordersync.UpstreamNotFound, ordersync.UpstreamValidation, ordersync.UpstreamProtocol:
		return true
	}
	return false
}

// deadLetterReason maps a permanent fetch failure to its dead-letter reason.
func deadLetterReason(err error) ordersync.DeadLetterReason {
	if ordersync.UpstreamErrorKindOf(err) == ordersync.UpstreamNotFound {
		return ordersync.ReasonUnknownOrder
	}
	return ordersync.ReasonRejected
}

// isTransient reports whether err is an upstream failure that may pass by
// itself: the failures the breaker counts and the backoff retries.
func isTransient(err error) bool {
	var ue *ordersync.UpstreamError
	return errors.As(err, &ue) && ue.Retryable()
}

// interactive reports whether someone waits on the admin API for a fetch
// of this cause: they get an answer at once rather than wait out a
// Retry-After.
func interactive(cause ordersync.Cause) bool {
	return cause == ordersync.CauseTrack || cause == ordersync.CauseCreate
}

func fetchOp(code string) string { return fmt.Sprintf("fetch order %s", code) }
