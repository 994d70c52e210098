package ordersync

import "time"

// The reconciler's schedule: each order that can still change is checked
// (fetched) when it is due, and how soon that is follows from how recently
// the order was active. A missed webhook is most likely on an order that
// just changed, and an order quiet for hours changes rarely, so checks
// come often after activity and thin out as the order stays quiet. The
// promise in the README follows from these figures.
const (
	// CheckMinInterval is the shortest wait before a check: right after
	// activity (creation, a webhook, a fetched change).
	CheckMinInterval = 15 * time.Second
	// CheckActiveWindow is how long an order counts as recently active:
	// within it, checks are at most CheckActiveMaxInterval apart.
	CheckActiveWindow      = time.Hour
	CheckActiveMaxInterval = 4 * time.Minute
	// CheckMaxInterval is the longest wait between two checks of any order
	// that can still change.
	CheckMaxInterval = 45 * time.Minute
	// checkGrowthDivisor: a check waits a quarter of the time the order
	// has been quiet, so a quiet order's checks stretch by 25% each time (about a
	// doubling every three checks) until a cap.
	checkGrowthDivisor = 4

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
)

// CheckState is what the schedule knows about an order.
type CheckState struct {
	// Status is the mirrored status; "" for an order never fetched.
	Status Status
	// ActiveAt is the order's last activity: when ordersync first saw it,
	// received its last webhook, or fetched a change.
	ActiveAt time.Time
	// LastEventType is the type of the order's last webhook.
	LastEventType EventType
	// ExpiresAt is when its link expires; zero when unknown.
	ExpiresAt time.Time
}

// NextCheck returns when the reconciler should next fetch the order, as of
// now; ok is false when the order's status is final and it leaves the
// schedule.
func NextCheck(st CheckState, now time.Time) (due time.Time, ok bool) {
	if !st.Status.CanChange() {
		return time.Time{}, false
	}
	age := max(0, now.Sub(st.ActiveAt))
	interval := age / checkGrowthDivisor
	if age < CheckActiveWindow {
		interval = min(interval, CheckActiveMaxInterval)
	}
	interval = min(max(interval, CheckMinInterval), CheckMaxInterval)
	unpaid := st.Status == "" || st.Status == StatusPending
	if unpaid && st.LastEventType.HintsPaymentInFlight() && age < CheckInFlightWindow {
		interval = min(interval, CheckInFlightInterval)
	}
	due = now.Add(interval)
	if unpaid && !st.ExpiresAt.IsZero() {
		switch untilExpiry := st.ExpiresAt.Sub(now); {
		case untilExpiry > 0:
			if untilExpiry <= CheckNearExpiry {
				due = now.Add(min(interval, CheckNearExpiryInterval))
			}
			if after := st.ExpiresAt.Add(CheckAfterExpiry); after.Before(due) {
				due = after
			}
		case -untilExpiry < CheckPastExpiryWindow:
			due = now.Add(min(interval, CheckPastExpiryInterval))
		}
	}
	return due, true
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
