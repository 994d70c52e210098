package ordersync

import (
	"context"
	"hash/fnv"
	"time"
)

// The reconciler's schedule: each order that can still change is checked
// (fetched) when it is due. Checks are spent to the promise and not beyond
// it: an order active in the last hour is checked evenly, often enough that
// a change whose webhook was lost is mirrored within 5 minutes, and any
// other open order often enough for the 1-hour promise. Evidence that a
// payment is in flight or a link is about to expire brings checks nearer.
// The promise in the README follows from these figures.
const (
	// CheckFirstFetch is the wait before the first check of a link
	// recorded but never fetched: the mirror holds nothing of it yet.
	CheckFirstFetch = 15 * time.Second
	// CheckActiveWindow is how long after its last activity an order
	// counts as active; within it, checks are CheckActiveInterval apart,
	// which with 40 s of lateness keeps the 5-minute promise. With the
	// check that closes the hour (made just after it, for a change made
	// in its last minutes), an active hour costs at most 15 checks.
	CheckActiveWindow   = time.Hour
	CheckActiveInterval = 4*time.Minute + 20*time.Second
	// CheckFirstSpread is the earliest first check after activity: the
	// first check comes between it and CheckActiveInterval, at a point
	// fixed by the order's code, so that orders active at once (a batch
	// mirrored together, a restart) are checked spread out and not in one
	// burst every interval.
	CheckFirstSpread = time.Minute
	// CheckMaxInterval is the wait between two checks of a quiet open
	// order: within the 1-hour promise with room for lateness, and about
	// 1.15 requests an hour.
	CheckMaxInterval = 52 * time.Minute

	// CheckInFlightInterval bounds the wait while a payment may be in
	// flight (the last webhook was a payment error or a 3-D Secure step),
	// for CheckInFlightWindow after that webhook: the buyer is likely to
	// pay in the next minutes.
	CheckInFlightInterval = time.Minute
	CheckInFlightWindow   = 30 * time.Minute
	// Links near expiry are checked at most CheckNearExpiryInterval apart
	// from CheckNearExpiry before it, once CheckAfterExpiry after it (the
	// service cancels the order, or a last-minute payment shows), and at
	// most CheckPastExpiryInterval apart for CheckPastExpiryWindow after.
	CheckNearExpiry         = 15 * time.Minute
	CheckNearExpiryInterval = 5 * time.Minute
	CheckAfterExpiry        = 30 * time.Second
	CheckPastExpiryWindow   = time.Hour
	CheckPastExpiryInterval = 15 * time.Minute

	// The dense schedule, for the orders of an account whose webhooks may
	// have been lost (DenseChecks), in place of the tiers': the first check
	// CheckDenseFirst after the order's activity, where a lost webhook is
	// likeliest (a buyer pays right after opening the link), then
	// CheckActiveInterval apart whatever the order's quiet time. A change
	// whose webhook was lost right after the activity is so mirrored within
	// about 15 s, not 1 to 4m20s; later ones within the active tier's
	// promise, and an active hour still costs at most 15 checks.
	CheckDenseFirst = 15 * time.Second
)

// DenseChecks is an account's evidence that its webhooks may have been
// lost: until Until, its open orders last active at or after Since are
// checked on the dense schedule. The zero value checks nothing densely.
type DenseChecks struct {
	Since, Until time.Time
}

// Covers reports whether an order last active at activeAt is checked
// densely at now.
func (d DenseChecks) Covers(activeAt, now time.Time) bool {
	return now.Before(d.Until) && !activeAt.Before(d.Since)
}

// denseInterval is the dense schedule's wait, as of a time age after the
// order's activity.
func denseInterval(age time.Duration) time.Duration {
	if age < CheckDenseFirst {
		return CheckDenseFirst - age
	}
	return CheckActiveInterval
}

// CheckReason says why a check is made: the rule that set its time. It is
// a label of the reconciler's request metrics, so an operator sees why it
// spends what it spends.
type CheckReason string

const (
	// CheckActive: the order was active in the last hour (the tier of the
	// 5-minute promise), or is a link never fetched.
	CheckActive CheckReason = "active"
	// CheckQuiet: any other open order (the tier of the 1-hour promise).
	CheckQuiet CheckReason = "quiet"
	// CheckPaymentInFlight: a payment error or a 3-D Secure step came
	// lately and the order is unpaid.
	CheckPaymentInFlight CheckReason = "payment_in_flight"
	// CheckExpiry: the unpaid order's link expires soon or did lately.
	CheckExpiry CheckReason = "expiry"
	// CheckEvidence: webhooks of the account may have been lost (a missed
	// webhook found, the receiver failing, a late webhook), so the orders
	// that may be affected are checked densely.
	CheckEvidence CheckReason = "evidence"
	// CheckCatchUp: the receiver was away; the orders active before the
	// gap are checked at once.
	CheckCatchUp CheckReason = "catch_up"
)

// CheckReasons are every CheckReason, for metrics.
var CheckReasons = []CheckReason{CheckActive, CheckQuiet, CheckPaymentInFlight, CheckExpiry, CheckEvidence, CheckCatchUp}

// CheckState is what the schedule knows about an order.
type CheckState struct {
	// Code is the order's code; it spreads the first checks of orders
	// active at once.
	Code string
	// Status is the mirrored status; "" for an order never fetched.
	Status Status
	// ActiveAt is the order's last activity: when ordersync first saw it,
	// received its last webhook, or fetched a change.
	ActiveAt time.Time
	// LastEventType is the type of the order's last webhook.
	LastEventType EventType
	// ExpiresAt is when its link expires; zero when unknown.
	ExpiresAt time.Time
	// Dense is the account's evidence of lost webhooks, if any.
	Dense DenseChecks
}

// NextCheck returns when the reconciler should next fetch the order, as of
// now; ok is false when the order's status is final and it leaves the
// schedule.
func NextCheck(st CheckState, now time.Time) (due time.Time, ok bool) {
	due, _, ok = PlanCheck(st, now)
	return due, ok
}

// PlanCheck is NextCheck with the reason: the rule that set the time.
// Asked at the time a check is made, the reason is why that check is due.
func PlanCheck(st CheckState, now time.Time) (due time.Time, reason CheckReason, ok bool) {
	if !st.Status.CanChange() {
		return time.Time{}, "", false
	}
	age := max(0, now.Sub(st.ActiveAt))
	interval, reason := CheckMaxInterval, CheckQuiet
	switch {
	case st.Status == "":
		interval, reason = CheckFirstFetch, CheckActive
	case age < CheckFirstSpread:
		interval, reason = FirstCheckAfter(st.Code)-age, CheckActive
	case age < CheckActiveWindow:
		interval, reason = CheckActiveInterval, CheckActive
	}
	if st.Status != "" && st.Dense.Covers(st.ActiveAt, now) {
		// The dense schedule replaces the tiers': its first check, 15 s
		// after the activity, takes the place of the active tier's spread
		// one, and the next come CheckActiveInterval apart.
		interval, reason = denseInterval(age), CheckEvidence
	}
	unpaid := st.Status == "" || st.Status == StatusPending
	if unpaid && st.LastEventType.HintsPaymentInFlight() && age < CheckInFlightWindow && CheckInFlightInterval < interval {
		interval, reason = CheckInFlightInterval, CheckPaymentInFlight
	}
	due = now.Add(interval)
	if unpaid && !st.ExpiresAt.IsZero() {
		switch untilExpiry := st.ExpiresAt.Sub(now); {
		case untilExpiry > 0:
			if untilExpiry <= CheckNearExpiry && CheckNearExpiryInterval < interval {
				due, reason = now.Add(CheckNearExpiryInterval), CheckExpiry
			}
			if after := st.ExpiresAt.Add(CheckAfterExpiry); after.Before(due) {
				due, reason = after, CheckExpiry
			}
		case -untilExpiry < CheckPastExpiryWindow:
			if CheckPastExpiryInterval < interval {
				due, reason = now.Add(CheckPastExpiryInterval), CheckExpiry
			}
		}
	}
	return due, reason, true
}

// FirstCheckAfter is how long after its activity an order is first
// checked: between CheckFirstSpread and CheckActiveInterval, in whole
// seconds, spread evenly over codes.
func FirstCheckAfter(code string) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(code))
	seconds := uint64((CheckActiveInterval - CheckFirstSpread) / time.Second)
	return CheckFirstSpread + time.Duration(h.Sum64()%(seconds+1))*time.Second
}

// DueReason says why a check made at at was due: the rule that set its
// time. The check that closes an order's active hour is set by the active
// rule and made just after the hour, so a check within one active interval
// after the hour counts for the active tier.
func DueReason(st CheckState, at time.Time) CheckReason {
	_, reason, ok := PlanCheck(st, at)
	if !ok {
		return ""
	}
	if reason == CheckQuiet && at.Sub(st.ActiveAt) < CheckActiveWindow+CheckActiveInterval {
		return CheckActive
	}
	return reason
}

// HintsPaymentInFlight reports whether an event of this type says a buyer is
// in the middle of paying: a failed attempt they may retry, or a 3-D Secure
// step whose outcome is a payment or not.
func (t EventType) HintsPaymentInFlight() bool {
	switch t {
	case EventPaymentError, EventRequires3ds, EventThreeDSecureAuthSucceeded,
		EventThreeDSecureAuthFailed, EventThreeDSecureAuthError, EventThreeDSecureAuthExpired:
		return true
	}
	return false
}

// DueCheck is an order whose reconcile check is due.
type DueCheck struct {
	OrderRef
	// Due is when the check was due.
	Due time.Time
	// State is what the schedule knows of the order when it was claimed.
	State CheckState
}

// CheckBacklog is how far behind its schedule the reconciler is.
type CheckBacklog struct {
	// Due is how many orders' checks are due.
	Due int
	// Oldest is when the most overdue of them was due; zero when none is.
	Oldest time.Time
	// Next is when the earliest check is due, whether it is due yet or
	// not; zero when no order is on the schedule. The reconciler sleeps
	// until then.
	Next time.Time
}

// CheckSchedule is the reconciler's schedule as the mirror keeps it: each
// order that can still change has a time its next check is due (set by
// NextCheck whenever the order is applied), so the schedule survives
// restarts and is shared by every process.
type CheckSchedule interface {
	// ClaimDueChecks returns up to limit orders of account whose check is
	// due at now, most overdue first, and moves their due time to retryAt:
	// a check that fails is tried again then, while one that succeeds
	// reschedules the order when its fetch is applied.
	ClaimDueChecks(ctx context.Context, account string, now time.Time, limit int, retryAt time.Time) ([]DueCheck, error)
	// CheckBacklog says how many of account's orders are due at now and
	// since when.
	CheckBacklog(ctx context.Context, account string, now time.Time) (CheckBacklog, error)
	// DeferCheck moves the check of an order still on the schedule to at.
	DeferCheck(ctx context.Context, account, code string, at time.Time) error
	// PullCheck brings the check of an order still on the schedule to at,
	// unless it is due sooner.
	PullCheck(ctx context.Context, account, code string, at time.Time) error
	// PullChecks makes the checks of account's open orders last active at
	// or after activeSince due at at, most recently active first (each a
	// microsecond before the next), or minGap after their last fetch if
	// that is later, and returns their codes. A limit above 0 pulls only
	// that many, the most recently active; the others keep their checks.
	PullChecks(ctx context.Context, account string, activeSince, at time.Time, minGap time.Duration, limit int) ([]string, error)
	// TightenChecks records account's evidence of lost webhooks, which the
	// schedule reads from then on whenever it sets a check, and brings the
	// checks of the open orders it covers to the dense schedule now.
	TightenChecks(ctx context.Context, account string, dense DenseChecks, now time.Time) (int, error)
	// DenseChecks returns account's evidence of lost webhooks.
	DenseChecks(ctx context.Context, account string) (DenseChecks, error)
}
