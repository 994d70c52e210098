package worker

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestGiveWayTakesTheTurnTheFetchesLeave: a reconciler's check waits while
// other fetches wait for the upstream, takes a turn the moment the last one
// leaves, and after that waits exactly for the rate's next turn. The clock
// is synctest's, so "at once" is no time at all, which no polling meets.
func TestGiveWayTakesTheTurnTheFetchesLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two requests a second, a bucket of one.
		s := &Syncer{rate: newUpstreamRate(2, 1, 1, time.Hour, func(float64) {})}
		giveWay := func() <-chan time.Time {
			took := make(chan time.Time, 1)
			go func() {
				// A check the test gave up on ends with the test's context,
				// not taking a turn.
				if s.giveWay(t.Context()) == nil {
					took <- time.Now()
				}
			}()
			return took
		}
		taken := func(took <-chan time.Time) bool {
			synctest.Wait()
			select {
			case <-took:
				return true
			default:
				return false
			}
		}
		s.foreground.enter()
		s.foreground.enter()
		took := giveWay()
		// The bubble's clock, past the limiter's next turn: the limiter's
		// own timer is the subject.
		time.Sleep(time.Second)
		if taken(took) {
			t.Fatal("the check took a turn while two fetches waited")
		}
		s.foreground.leave()
		if taken(took) {
			t.Fatal("the check took a turn while a fetch waited")
		}
		s.foreground.leave()
		if !taken(took) {
			t.Fatal("the check did not take the free turn when the last fetch left")
		}
		// The bucket is empty: the next turn is half a second away.
		left := time.Now()
		if at := <-giveWay(); at.Sub(left) != 500*time.Millisecond {
			t.Errorf("the next check took its turn %s after the last, want 500ms", at.Sub(left))
		}
	})
}
