package ordersync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Via is the way an action reached ordersync.
type Via string

// The ways in.
const (
	ViaAPI     Via = "api"
	ViaConsole Via = "console"
	ViaCLI     Via = "cli"
)

// OutcomeOK is the outcome of an action that succeeded; any other outcome
// is the HTTP status it was answered with ("403") or the error.
const OutcomeOK = "ok"

// OutcomeCancelled is the outcome of an action whose caller went away
// before it ended (a client that closed the connection, an interrupted
// command): what it did until then stands.
const OutcomeCancelled = "cancelled"

// AuditRecord is one action in the audit trail: who (the token's name or
// the operating-system user, never a token), as which role, which way,
// what, on which object, and how it ended.
type AuditRecord struct {
	ID      int64
	At      time.Time
	Actor   string
	Role    Role
	Via     Via
	Action  string
	Object  string
	Outcome string
}

// OutcomeOfStatus is the outcome of an action answered with an HTTP status:
// ok for a success or a redirect (a console form answers with the page to
// see next), the status for a refusal or a failure.
func OutcomeOfStatus(status int) string {
	if status >= 200 && status < 400 {
		return OutcomeOK
	}
	return strconv.Itoa(status)
}

// OutcomeOfError is the outcome of an action that returned err.
func OutcomeOfError(err error) string {
	if err == nil {
		return OutcomeOK
	}
	if errors.Is(err, context.Canceled) {
		return OutcomeCancelled
	}
	return Clip(err.Error(), 500)
}

// AuditFilter selects audit records: by actor and action (exact), by
// time ([Since, Until)), newest first, Limit at a time after the record
// Before (a page's cursor; 0: from the newest).
type AuditFilter struct {
	// Actor and Action match in any case.
	Actor, Action string
	Since, Until  time.Time
	Before        int64
	Limit         int
}

// AuditPage is one page of the trail, newest first. Next is the Before of
// the following page, 0 when this one is the last.
type AuditPage struct {
	Records []AuditRecord
	Next    int64
}

// AuditLog keeps the audit trail.
type AuditLog interface {
	RecordAudit(ctx context.Context, rec AuditRecord) error
	ListAudit(ctx context.Context, filter AuditFilter) (AuditPage, error)
}

// ValidateAuditRecord names what a record lacks; the trail refuses it.
func ValidateAuditRecord(rec AuditRecord) error {
	switch {
	case rec.Actor == "":
		return fmt.Errorf("audit record of %q: the actor is required", rec.Action)
	case rec.Action == "":
		return fmt.Errorf("audit record by %s: the action is required", rec.Actor)
	case rec.Outcome == "":
		return fmt.Errorf("audit record of %s by %s: the outcome is required", rec.Action, rec.Actor)
	}
	switch rec.Via {
	case ViaAPI, ViaConsole, ViaCLI:
		return nil
	}
	return fmt.Errorf("audit record of %s by %s: via %q is not api, console or cli", rec.Action, rec.Actor, rec.Via)
}
