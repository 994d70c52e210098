package ordersync

import (
	"testing"
	"time"
)

func TestNextCheck(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name string
		st   CheckState
		want time.Duration // from now; -1: leaves the schedule
	}{
		// Activity brings the check near.
		{"just created, never fetched", CheckState{ActiveAt: now}, CheckMinInterval},
		{"webhook a moment ago", CheckState{Status: StatusPending, ActiveAt: now}, CheckMinInterval},
		{"paid order, change fetched a minute ago", CheckState{Status: StatusPaid, ActiveAt: ago(time.Minute)}, CheckMinInterval},
		// Quiet checks push it out: a quarter of the quiet time...
		{"quiet 2m", CheckState{Status: StatusPending, ActiveAt: ago(2 * time.Minute)}, 30 * time.Second},
		{"quiet 8m", CheckState{Status: StatusPending, ActiveAt: ago(8 * time.Minute)}, 2 * time.Minute},
		// ...at most 4 minutes apart within the hour after activity...
		{"quiet 20m", CheckState{Status: StatusPending, ActiveAt: ago(20 * time.Minute)}, CheckActiveMaxInterval},
		{"quiet 59m", CheckState{Status: StatusPaid, ActiveAt: ago(59 * time.Minute)}, CheckActiveMaxInterval},
		// ...then further, up to 45 minutes.
		{"quiet 1h", CheckState{Status: StatusPending, ActiveAt: ago(time.Hour)}, 15 * time.Minute},
		{"quiet 2h", CheckState{Status: StatusPaid, ActiveAt: ago(2 * time.Hour)}, 30 * time.Minute},
		{"quiet 3 days", CheckState{Status: StatusPending, ActiveAt: ago(72 * time.Hour)}, CheckMaxInterval},
		{"activity in the future (clock skew)", CheckState{Status: StatusPending, ActiveAt: now.Add(time.Hour)}, CheckMinInterval},
		// Final statuses leave the schedule.
		{"cancelled", CheckState{Status: StatusCancelled, ActiveAt: now}, -1},
		{"finalized", CheckState{Status: StatusFinalized, ActiveAt: ago(time.Hour)}, -1},
		{"unknown status stays", CheckState{Status: "REFUNDED", ActiveAt: ago(72 * time.Hour)}, CheckMaxInterval},
		// A payment in flight is checked soon.
		{"payment error 20m ago", CheckState{Status: StatusPending, ActiveAt: ago(20 * time.Minute), LastEventType: EventPaymentError}, CheckInFlightInterval},
		{"3-D Secure 10m ago", CheckState{Status: StatusPending, ActiveAt: ago(10 * time.Minute), LastEventType: EventRequires3ds}, CheckInFlightInterval},
		{"3-D Secure failed 10m ago", CheckState{Status: StatusPending, ActiveAt: ago(10 * time.Minute), LastEventType: EventThreeDSecureAuthFailed}, CheckInFlightInterval},
		{"payment error long ago", CheckState{Status: StatusPending, ActiveAt: ago(40 * time.Minute), LastEventType: EventPaymentError}, CheckActiveMaxInterval},
		{"paid after a payment error", CheckState{Status: StatusPaid, ActiveAt: ago(20 * time.Minute), LastEventType: EventPaymentError}, CheckActiveMaxInterval},
		// Links near or past expiry.
		{"expires in 2h", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(2 * time.Hour)}, CheckMaxInterval},
		{"expires in 10m", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(10 * time.Minute)}, CheckNearExpiryInterval},
		{"expires in 2m: right after expiry", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(2 * time.Minute)}, 2*time.Minute + CheckAfterExpiry},
		{"expires in 20m, quiet", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(20 * time.Minute)}, 20*time.Minute + CheckAfterExpiry},
		{"expired 10m ago, still pending", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: ago(10 * time.Minute)}, CheckPastExpiryInterval},
		{"expired 2h ago, still pending", CheckState{Status: StatusPending, ActiveAt: ago(3 * time.Hour), ExpiresAt: ago(2 * time.Hour)}, CheckMaxInterval},
		{"paid order ignores expiry", CheckState{Status: StatusPaid, ActiveAt: ago(3 * time.Hour), ExpiresAt: now.Add(2 * time.Minute)}, CheckMaxInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, ok := NextCheck(tt.st, now)
			if tt.want < 0 {
				if ok {
					t.Fatalf("due in %s, want no check", due.Sub(now))
				}
				return
			}
			if !ok {
				t.Fatalf("no check, want one in %s", tt.want)
			}
			if got := due.Sub(now); got != tt.want {
				t.Errorf("due in %s, want %s", got, tt.want)
			}
		})
	}
}

// TestNextCheckKeepsThePromise walks the schedule of a quiet order from its
// last activity: every gap between two checks within the hour after the
// activity is at most 4 minutes, every later gap at most 45, and the checks
// of the first hour are few enough for the README's budget figures.
func TestNextCheckKeepsThePromise(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := CheckState{Status: StatusPending, ActiveAt: start}
	at, checks := start, 0
	firstHour := 0
	for at.Before(start.Add(48 * time.Hour)) {
		due, ok := NextCheck(st, at)
		if !ok {
			t.Fatal("a pending order left the schedule")
		}
		gap := due.Sub(at)
		if at.Sub(start) < CheckActiveWindow && gap > CheckActiveMaxInterval {
			t.Fatalf("at %s after activity the next check is %s away, over %s", at.Sub(start), gap, CheckActiveMaxInterval)
		}
		if gap > CheckMaxInterval {
			t.Fatalf("at %s after activity the next check is %s away, over %s", at.Sub(start), gap, CheckMaxInterval)
		}
		at = due
		checks++
		if at.Sub(start) <= time.Hour {
			firstHour++
		}
	}
	if firstHour > 30 {
		t.Errorf("%d checks in the first hour, more than the 30 the README's budget assumes", firstHour)
	}
	t.Logf("%d checks in the first hour, %d in 48 hours", firstHour, checks)
}
