package ordersync

import (
	"fmt"
	"testing"
	"time"
)

func TestNextCheck(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	// Evidence found just now, with the default window and hold: the
	// orders active in the hour before it, for an hour.
	dense := DenseChecks{Since: ago(time.Hour), Until: now.Add(time.Hour)}
	// Evidence found 40 minutes ago: it still covers orders active up to
	// 100 minutes ago, now quiet, for 20 minutes more.
	older := DenseChecks{Since: ago(100 * time.Minute), Until: now.Add(20 * time.Minute)}
	tests := []struct {
		name   string
		st     CheckState
		want   time.Duration // from now; -1: leaves the schedule
		reason CheckReason
	}{
		// A link never fetched is fetched soon: the mirror holds nothing of it.
		{"recorded, never fetched", CheckState{ActiveAt: now}, CheckFirstFetch, CheckActive},
		// An order active in the last hour is checked evenly.
		{"webhook a minute ago", CheckState{Status: StatusPending, ActiveAt: ago(time.Minute)}, CheckActiveInterval, CheckActive},
		{"paid order, change fetched a minute ago", CheckState{Status: StatusPaid, ActiveAt: ago(time.Minute)}, CheckActiveInterval, CheckActive},
		{"quiet 20m", CheckState{Status: StatusPending, ActiveAt: ago(20 * time.Minute)}, CheckActiveInterval, CheckActive},
		{"quiet 59m", CheckState{Status: StatusPaid, ActiveAt: ago(59 * time.Minute)}, CheckActiveInterval, CheckActive},
		// Any other open order, once within the 1-hour promise.
		{"quiet 1h", CheckState{Status: StatusPending, ActiveAt: ago(time.Hour)}, CheckMaxInterval, CheckQuiet},
		{"quiet 3 days", CheckState{Status: StatusPending, ActiveAt: ago(72 * time.Hour)}, CheckMaxInterval, CheckQuiet},
		{"activity in the future (clock skew)", CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: now.Add(time.Hour)}, FirstCheckAfter("yY7Mcnd"), CheckActive},
		{"webhook a moment ago", CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: now}, FirstCheckAfter("yY7Mcnd"), CheckActive},
		{"webhook 30s ago", CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: ago(30 * time.Second)}, FirstCheckAfter("yY7Mcnd") - 30*time.Second, CheckActive},
		// Evidence of lost webhooks: the account's orders active since
		// it are checked on the dense schedule until it expires.
		{"dense: webhook a moment ago", CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: now, Dense: dense}, CheckDenseFirst, CheckEvidence},
		{"dense: 10s after a webhook", CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: ago(10 * time.Second), Dense: dense}, 5 * time.Second, CheckEvidence},
		{"dense: quiet 2m", CheckState{Status: StatusPending, ActiveAt: ago(2 * time.Minute), Dense: dense}, CheckActiveInterval, CheckEvidence},
		{"dense: quiet 20m", CheckState{Status: StatusPaid, ActiveAt: ago(20 * time.Minute), Dense: dense}, CheckActiveInterval, CheckEvidence},
		{"dense: quiet 59m", CheckState{Status: StatusPending, ActiveAt: ago(59 * time.Minute), Dense: dense}, CheckActiveInterval, CheckEvidence},
		// Active before the window: the 1-hour promise's quiet checks.
		{"dense: quiet 61m, active before the window", CheckState{Status: StatusPending, ActiveAt: ago(61 * time.Minute), Dense: dense}, CheckMaxInterval, CheckQuiet},
		{"dense: quiet 3h", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), Dense: dense}, CheckMaxInterval, CheckQuiet},
		// Active within the hour before older evidence: dense past the
		// order's active hour, until the record has been clean for the hold.
		{"older evidence: quiet 90m, still dense", CheckState{Status: StatusPending, ActiveAt: ago(90 * time.Minute), Dense: older}, CheckActiveInterval, CheckEvidence},
		{"older evidence: quiet 110m, before its window", CheckState{Status: StatusPending, ActiveAt: ago(110 * time.Minute), Dense: older}, CheckMaxInterval, CheckQuiet},
		{"dense: evidence expired", CheckState{Status: StatusPending, ActiveAt: ago(2 * time.Minute), Dense: DenseChecks{Since: ago(time.Hour), Until: now}}, CheckActiveInterval, CheckActive},
		{"older evidence expired: quiet 90m", CheckState{Status: StatusPending, ActiveAt: ago(90 * time.Minute), Dense: DenseChecks{Since: ago(100 * time.Minute), Until: now}}, CheckMaxInterval, CheckQuiet},
		{"dense: never fetched stays first fetch", CheckState{ActiveAt: now, Dense: dense}, CheckFirstFetch, CheckActive},
		{"dense: payment in flight stays sooner", CheckState{Status: StatusPending, ActiveAt: ago(10 * time.Minute), LastEventType: EventRequires3ds, Dense: dense}, CheckInFlightInterval, CheckPaymentInFlight},
		{"dense: final leaves", CheckState{Status: StatusCancelled, ActiveAt: now, Dense: dense}, -1, ""},
		// Final statuses leave the schedule.
		{"cancelled", CheckState{Status: StatusCancelled, ActiveAt: now}, -1, ""},
		{"finalized", CheckState{Status: StatusFinalized, ActiveAt: ago(time.Hour)}, -1, ""},
		{"unknown status stays", CheckState{Status: "REFUNDED", ActiveAt: ago(72 * time.Hour)}, CheckMaxInterval, CheckQuiet},
		// A payment in flight is checked soon.
		{"payment error 20m ago", CheckState{Status: StatusPending, ActiveAt: ago(20 * time.Minute), LastEventType: EventPaymentError}, CheckInFlightInterval, CheckPaymentInFlight},
		{"3-D Secure 10m ago", CheckState{Status: StatusPending, ActiveAt: ago(10 * time.Minute), LastEventType: EventRequires3ds}, CheckInFlightInterval, CheckPaymentInFlight},
		{"3-D Secure failed 10m ago", CheckState{Status: StatusPending, ActiveAt: ago(10 * time.Minute), LastEventType: EventThreeDSecureAuthFailed}, CheckInFlightInterval, CheckPaymentInFlight},
		{"payment error long ago", CheckState{Status: StatusPending, ActiveAt: ago(40 * time.Minute), LastEventType: EventPaymentError}, CheckActiveInterval, CheckActive},
		{"paid after a payment error", CheckState{Status: StatusPaid, ActiveAt: ago(20 * time.Minute), LastEventType: EventPaymentError}, CheckActiveInterval, CheckActive},
		// Links near or past expiry.
		{"expires in 2h", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(2 * time.Hour)}, CheckMaxInterval, CheckQuiet},
		{"expires in 10m", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(10 * time.Minute)}, CheckNearExpiryInterval, CheckExpiry},
		{"expires in 10m, active", CheckState{Status: StatusPending, ActiveAt: ago(time.Minute), ExpiresAt: now.Add(10 * time.Minute)}, CheckActiveInterval, CheckActive},
		{"expires in 2m: right after expiry", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(2 * time.Minute)}, 2*time.Minute + CheckAfterExpiry, CheckExpiry},
		{"expires in 20m, quiet", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(20 * time.Minute)}, 20*time.Minute + CheckAfterExpiry, CheckExpiry},
		{"expired 10m ago, still pending", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: ago(10 * time.Minute)}, CheckPastExpiryInterval, CheckExpiry},
		{"expired 2h ago, still pending", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: ago(2 * time.Hour)}, CheckMaxInterval, CheckQuiet},
		{"paid order ignores expiry", CheckState{Status: StatusPaid, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(2 * time.Minute)}, CheckMaxInterval, CheckQuiet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, reason, ok := PlanCheck(tt.st, now)
			if tt.want < 0 {
				if ok {
					t.Fatalf("due in %s, want no check", due.Sub(now))
				}
				return
			}
			if !ok {
				t.Fatalf("no check, want one in %s", tt.want)
			}
			if got := due.Sub(now); got != tt.want || reason != tt.reason {
				t.Errorf("due in %s for %q, want %s for %q", got, reason, tt.want, tt.reason)
			}
		})
	}
}

// TestFirstCheckSpreads: orders active at once are first checked spread
// over the minutes from CheckFirstSpread to CheckActiveInterval, each
// minute taking about its share.
func TestFirstCheckSpreads(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const n = 3000
	perMinute := map[time.Duration]int{}
	for i := range n {
		due, ok := NextCheck(CheckState{Status: StatusPending, Code: fmt.Sprintf("c%05d", i), ActiveAt: now}, now)
		after := due.Sub(now)
		if !ok || after < CheckFirstSpread || after > CheckActiveInterval {
			t.Fatalf("first check %s after activity, want within [%s, %s]", after, CheckFirstSpread, CheckActiveInterval)
		}
		perMinute[after.Truncate(time.Minute)]++
	}
	even := int(n * time.Minute / (CheckActiveInterval - CheckFirstSpread))
	for m := CheckFirstSpread; m+time.Minute <= CheckActiveInterval; m += time.Minute {
		if got := perMinute[m]; got < even*8/10 || got > even*12/10 {
			t.Errorf("%d of %d first checks in the minute from %s, want about %d", got, n, m, even)
		}
	}
}

// TestNextCheckKeepsThePromise walks the schedule of a quiet order from its
// last activity: every gap between two checks within the hour after the
// activity is at most CheckActiveInterval, every later gap at most 52
// minutes; the first hour costs at most 15 checks (with the one that
// closes it) and every later hour at most 1.2 on average.
func TestNextCheckKeepsThePromise(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: start}
	const hours = 48
	at, firstHour, later := start, 0, 0
	for at.Before(start.Add(hours * time.Hour)) {
		due, ok := NextCheck(st, at)
		if !ok {
			t.Fatal("a pending order left the schedule")
		}
		gap := due.Sub(at)
		if at.Sub(start) < CheckActiveWindow && gap > CheckActiveInterval {
			t.Fatalf("at %s after activity the next check is %s away, over %s", at.Sub(start), gap, CheckActiveInterval)
		}
		if gap > CheckMaxInterval {
			t.Fatalf("at %s after activity the next check is %s away, over %s", at.Sub(start), gap, CheckMaxInterval)
		}
		at = due
		if DueReason(st, at) == CheckActive {
			firstHour++
		} else {
			later++
		}
	}
	if firstHour > 15 || firstHour < 13 {
		t.Errorf("%d checks for the first hour, want 13 to 15", firstHour)
	}
	if perHour := float64(later) / (hours - 1); perHour > 1.2 {
		t.Errorf("%.2f checks an hour after the first, want at most 1.2", perHour)
	}
	t.Logf("%d checks in the first hour, %d in the next %d hours", firstHour, later, hours-1)
}

// TestDenseHourKeepsThePromise walks the dense schedule of an order under
// evidence from its activity: every gap within the hour after it is at
// most CheckActiveInterval, and the hour costs at most 15 checks with the
// one that closes it, as the active tier's does.
func TestDenseHourKeepsThePromise(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	dense := DenseChecks{Since: start.Add(-time.Hour), Until: start.Add(3 * time.Hour)}
	st := CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: start, Dense: dense}
	at, checks := start, 0
	for at.Sub(start) < CheckActiveWindow {
		due, ok := NextCheck(st, at)
		if !ok {
			t.Fatal("a pending order left the schedule")
		}
		if gap := due.Sub(at); gap > CheckActiveInterval {
			t.Fatalf("at %s after activity the next check is %s away, over %s", at.Sub(start), gap, CheckActiveInterval)
		}
		if reason := DueReason(st, due); reason != CheckEvidence {
			t.Fatalf("the check %s after activity is due for %q, want %q", due.Sub(start), reason, CheckEvidence)
		}
		at = due
		checks++
	}
	if checks > 15 {
		t.Errorf("%d checks for an active hour under evidence (the last closing it, %s after the activity), want at most 15", checks, at.Sub(start))
	}
}

// TestDueReasonOfTheDenseFirstCheck: the dense schedule's first check,
// 15 s after the activity, counts as evidence, and the next comes
// CheckActiveInterval later, not at the active tier's spread first check.
func TestDueReasonOfTheDenseFirstCheck(t *testing.T) {
	active := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	dense := DenseChecks{Since: active.Add(-time.Hour), Until: active.Add(time.Hour)}
	st := CheckState{Status: StatusPending, Code: "yY7Mcnd", ActiveAt: active, Dense: dense}
	due, ok := NextCheck(st, active)
	if !ok || due != active.Add(CheckDenseFirst) {
		t.Fatalf("next check %v (ok %v), want %v", due, ok, active.Add(CheckDenseFirst))
	}
	if got := DueReason(st, due); got != CheckEvidence {
		t.Errorf("the dense first check's reason %q, want %q", got, CheckEvidence)
	}
	if next, _ := NextCheck(st, due); next != due.Add(CheckActiveInterval) {
		t.Errorf("after the dense first check the next is %s later, want %s", next.Sub(due), CheckActiveInterval)
	}
	st.Dense = DenseChecks{}
	if got := DueReason(st, active.Add(FirstCheckAfter(st.Code))); got != CheckActive {
		t.Errorf("without evidence, the first check's reason %q, want %q", got, CheckActive)
	}
}
