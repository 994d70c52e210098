package console

import (
	"fmt"
	"testing"
	"time"
)

// TestSignInLimiterBound: however many addresses a hostile client uses,
// the limiter tracks at most maxClients; beyond them the others share one
// record, which slows them down together, and the records already kept
// (a guesser's among them) are not wiped to make room.
func TestSignInLimiterBound(t *testing.T) {
	l := newSignInLimiter()
	l.maxClients = 100
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for range 6 {
		l.fail("guesser", now)
	}
	if l.wait("guesser", now) != time.Second {
		t.Fatalf("the guesser's wait after 6 failures: %v, want 1s", l.wait("guesser", now))
	}
	for i := range 10_000 {
		l.fail(fmt.Sprint("10.0.", i/256, ".", i%256), now)
	}
	if n := l.tracked(); n != 100 {
		t.Errorf("tracked %d clients, want the bound 100", n)
	}
	if l.wait("guesser", now) != time.Second {
		t.Error("the guesser's record was wiped by the flood")
	}
	if w := l.wait("203.0.113.9", now); w != l.maxWait {
		t.Errorf("a newcomer while the table is full waits %v, want the shared record's %v", w, l.maxWait)
	}
	// Records whose time has passed make room again.
	later := now.Add(l.forget + l.maxWait + time.Second)
	if l.wait("203.0.113.9", later) != 0 || l.fail("203.0.113.9", later) != 0 {
		t.Error("a newcomer after the flood was forgotten is still held up")
	}
	if n := l.tracked(); n > 100 {
		t.Errorf("tracked %d clients after forgetting, want at most 100", n)
	}
}

// TestSignInLimiterWaits: free failures cost nothing, then each costs
// twice the wait of the one before, up to maxWait; the right token
// forgets them, and so does an hour without failures.
func TestSignInLimiterWaits(t *testing.T) {
	l := newSignInLimiter()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var waits []time.Duration
	for range 16 {
		waits = append(waits, l.fail("c", now))
	}
	want := "[0s 0s 0s 0s 0s 1s 2s 4s 8s 16s 32s 1m4s 2m8s 4m16s 5m0s 5m0s]"
	if fmt.Sprint(waits) != want {
		t.Errorf("waits %v, want %s", waits, want)
	}
	l.succeed("c")
	if l.wait("c", now) != 0 || l.fail("c", now) != 0 {
		t.Error("the right token did not forget the failures")
	}
	for range 5 {
		l.fail("d", now)
	}
	if l.fail("d", now.Add(l.forget+time.Second)) != 0 {
		t.Error("failures an hour old still count")
	}
}
