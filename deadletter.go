package ordersync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DeadLetterReason says why an event could not be processed.
type DeadLetterReason string

// Reasons of dead letters: each is a permanent failure.
const (
	ReasonUnknownOrder     DeadLetterReason = "unknown_order"     // upstream 404
	ReasonUnresolved       DeadLetterReason = "unresolved"        // no order code for the event's keys
	ReasonMalformed        DeadLetterReason = "malformed"         // the body is not a usable event
	ReasonRetriesExhausted DeadLetterReason = "retries_exhausted" // transient failures outlasted the budget
	ReasonRejected         DeadLetterReason = "rejected"          // upstream refused the request (400, protocol)
)

// DeadLetterReasons lists every reason, in the order help texts give them.
var DeadLetterReasons = []DeadLetterReason{ReasonUnknownOrder, ReasonUnresolved, ReasonMalformed, ReasonRetriesExhausted, ReasonRejected}

// ParseDeadLetterReason accepts a known reason in any letter case; a filter
// by a reason that no dead letter can have would silently match none.
func ParseDeadLetterReason(s string) (DeadLetterReason, error) {
	r := DeadLetterReason(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(DeadLetterReasons, r) {
		return r, nil
	}
	names := make([]string, len(DeadLetterReasons))
	for i, r := range DeadLetterReasons {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown dead letter reason %q (want %s)", s, strings.Join(names, ", "))
}

// DeadLetter is an event that ended in a permanent failure, kept whole so it
// can be replayed.
type DeadLetter struct {
	ID             int64
	MsgID          string
	Account        string
	Reason         DeadLetterReason
	Attempts       int
	LastError      string
	OrderID        ID
	OrderReference string
	OrderCode      string
	// Body and Headers are the queued message as received.
	Body        []byte
	Headers     map[string]string
	CreatedAt   time.Time
	ReplayedAt  *time.Time
	ReplayCount int
}

// ValidateDeadLetter names what a letter lacks; the store refuses it.
func ValidateDeadLetter(dl DeadLetter) error {
	switch {
	case dl.MsgID == "":
		return errors.New("MsgID is required")
	case dl.Account == "":
		return errors.New("Account is required")
	case dl.Reason == "":
		return errors.New("Reason is required")
	}
	return nil
}

// DeadLetterFilter selects dead letters; zero fields select all.
type DeadLetterFilter struct {
	Account         string
	Reason          DeadLetterReason
	IncludeReplayed bool
	// OrderID or OrderReference select the letters of one order's keys, as
	// when an unresolved event's order becomes known.
	OrderID        ID
	OrderReference string
	// RequeuedFrom, when set, selects the letters of events a replay
	// re-queued at or after then (before RequeuedTo, when set) that failed
	// again: what a replay job's "re-queued" turned into.
	RequeuedFrom, RequeuedTo time.Time
	// BeforeID selects letters older than that one (a smaller id): the
	// next page of a listing, which is newest first. Counts ignore it.
	BeforeID int64
	Limit    int
}

// DeadLetters is the dead-letter store.
type DeadLetters interface {
	ListDeadLetters(ctx context.Context, filter DeadLetterFilter) ([]*DeadLetter, error)
	FindDeadLetter(ctx context.Context, id int64) (*DeadLetter, error)
	MarkDeadLetterReplayed(ctx context.Context, id int64, at time.Time) error
	// CountDeadLetters counts the letters the filter selects (its Limit
	// and BeforeID aside), per reason.
	CountDeadLetters(ctx context.Context, filter DeadLetterFilter) (map[DeadLetterReason]int, error)
}

// Replayer sends dead-lettered events through the normal path again.
type Replayer interface {
	ReplayDeadLetter(ctx context.Context, id int64) error
	// ReplayDeadLetters replays every letter the filter selects and returns
	// how many.
	ReplayDeadLetters(ctx context.Context, filter DeadLetterFilter) (int, error)
}
