package ordersync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// OverviewParams selects the figures of an overview: the account's, as of
// Now. Window is the recent past the rates and the sync lag are read over
// (default DefaultOverviewWindow); HealthWindow the one each endpoint's
// deliveries are (default DefaultHealthWindow).
type OverviewParams struct {
	Account      string
	Now          time.Time
	Window       time.Duration
	HealthWindow time.Duration
}

// The overview's default windows: five minutes, long enough that a rate
// per minute is not one burst, short enough to show a change at once; an
// hour of deliveries, enough to judge an endpoint that is sent to rarely.
const (
	DefaultOverviewWindow = 5 * time.Minute
	DefaultHealthWindow   = time.Hour
)

// WithDefaults fills the windows left zero.
func (p OverviewParams) WithDefaults() OverviewParams {
	if p.Window <= 0 {
		p.Window = DefaultOverviewWindow
	}
	if p.HealthWindow <= 0 {
		p.HealthWindow = DefaultHealthWindow
	}
	return p
}

// MaxLagSamples bounds how many mirrored webhooks the sync lag is read
// from: the newest of the window.
const MaxLagSamples = 500

// Overview is the state of the service as every process sharing the
// mirror sees it: what the mirror records, not one process's counters.
type Overview struct {
	Params OverviewParams
	// Webhooks are the event log's rows received in the window (every
	// outcome); Mirrored, those of them whose order was fetched and
	// mirrored (outcome synced, or already_fetched: a fetch sent after
	// their receipt had mirrored it).
	Webhooks, Mirrored int
	// Lag is the time from a webhook's receipt to the fetch that mirrored
	// its order, over those of the newest MaxLagSamples mirrored webhooks
	// of the window that are still their order's latest.
	Lag SyncLag
	// Waiting counts the orders ordersync has heard of but never fetched;
	// OldestWaiting is when it first heard of the oldest of them.
	Waiting       int
	OldestWaiting time.Time
	// Checks is the reconciler's backlog at Now.
	Checks CheckBacklog
	// Unsent counts outbox messages not yet published; Oldest is the
	// first of them, nil when there is none.
	Unsent       int
	OldestUnsent *OutboxHead
	// DeadLetters counts the account's dead letters not replayed, by
	// reason, in the order of DeadLetterReasons; reasons without any are
	// left out.
	DeadLetters []ReasonCount
	// Endpoints is each HTTP endpoint's health over HealthWindow.
	Endpoints []EndpointHealth
}

// SyncLag summarizes the lags of Samples mirrored webhooks.
type SyncLag struct {
	Samples     int
	Median, Max time.Duration
}

// OutboxHead is an outbox message as the overview shows it.
type OutboxHead struct {
	ID        int64
	Subject   string
	OrderCode string
	CreatedAt time.Time
}

// ReasonCount is how many dead letters have one reason.
type ReasonCount struct {
	Reason DeadLetterReason
	Count  int
}

// EndpointHealth is an endpoint, how deliveries to it ended over the
// health window, and what is left of its failures.
type EndpointHealth struct {
	ID, URL        string
	Disabled       bool
	DisabledReason string
	DeliveryHealth
	// DeadLetters counts its delivery dead letters not replayed.
	DeadLetters int
}

// OverviewReader reads the console's overview from the mirror.
type OverviewReader interface {
	Overview(ctx context.Context, params OverviewParams) (Overview, error)
}

// LagOf summarizes lags (sorted in place).
func LagOf(lags []time.Duration) SyncLag {
	if len(lags) == 0 {
		return SyncLag{}
	}
	slices.Sort(lags)
	return SyncLag{Samples: len(lags), Median: lags[(len(lags)-1)/2], Max: lags[len(lags)-1]}
}

// DeliveryError says how a failed delivery ended: its last HTTP status,
// when it got one, and the detail recorded.
func DeliveryError(status int, detail string) string {
	switch {
	case status > 0 && detail != "":
		return fmt.Sprintf("HTTP %d: %s", status, detail)
	case status > 0:
		return fmt.Sprintf("HTTP %d", status)
	}
	return detail
}

// SortReasonCounts orders counts as DeadLetterReasons lists the reasons,
// any other reason after them by name.
func SortReasonCounts(counts []ReasonCount) {
	rank := func(r DeadLetterReason) int {
		if i := slices.Index(DeadLetterReasons, r); i >= 0 {
			return i
		}
		return len(DeadLetterReasons)
	}
	slices.SortFunc(counts, func(a, b ReasonCount) int {
		if d := rank(a.Reason) - rank(b.Reason); d != 0 {
			return d
		}
		return strings.Compare(string(a.Reason), string(b.Reason))
	})
}
