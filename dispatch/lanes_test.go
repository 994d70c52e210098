package dispatch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ordersync/ordersync/delivery"
)

// TestLanes drives the lanes through a script of steps; after each it
// checks what the step answered, the count and the oldest event held.
func TestLanes(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ev := func(name string, minute int) *held {
		return &held{order: &delivery.Order{Code: name}, at: t0.Add(time.Duration(minute) * time.Minute)}
	}
	type step struct {
		op   string // push, head, pop, drop
		key  string
		ev   *held  // push
		want string // push: "start" or "wait"; head: the event's order code, or "" when the lane ended
		n    int
		old  int // minute of the oldest held; -1: none
	}
	a1, a2, a3, b1, c1 := ev("a1", 10), ev("a2", 20), ev("a3", 30), ev("b1", 5), ev("c1", 1)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one lane in order", []step{
			{"push", "a", a1, "start", 1, 10},
			{"push", "a", a2, "wait", 2, 10},
			{"head", "a", nil, "a1", 2, 10},
			{"pop", "a", nil, "", 1, 20},
			{"head", "a", nil, "a2", 1, 20},
			{"pop", "a", nil, "", 0, -1},
			{"head", "a", nil, "", 0, -1},
			// The lane ended: the next event starts it again.
			{"push", "a", a3, "start", 1, 30},
		}},
		{"lanes apart", []step{
			{"push", "a", a1, "start", 1, 10},
			{"push", "b", b1, "start", 2, 5},
			{"push", "a", a2, "wait", 3, 5},
			{"head", "b", nil, "b1", 3, 5},
			{"pop", "b", nil, "", 2, 10},
			{"head", "a", nil, "a1", 2, 10},
		}},
		{"drop leaves the other lanes", []step{
			{"push", "a", a1, "start", 1, 10},
			{"push", "a", a2, "wait", 2, 10},
			{"push", "c", c1, "start", 3, 1},
			{"push", "b", b1, "start", 4, 1},
			{"drop", "a", nil, "", 2, 1},
			{"head", "a", nil, "", 2, 1},
			{"pop", "c", nil, "", 1, 5},
			{"drop", "b", nil, "", 0, -1},
			{"push", "a", a3, "start", 1, 30},
		}},
		{"an older event behind a newer one", []step{
			// A replay queues events older than those in flight.
			{"push", "a", a2, "start", 1, 20},
			{"push", "a", c1, "wait", 2, 1},
			{"pop", "a", nil, "", 1, 1},
			{"head", "a", nil, "c1", 1, 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const max = 10
			l := newLanes()
			prev := 0
			for i, s := range tc.steps {
				var got string
				_, freed := l.room(max)
				switch s.op {
				case "push":
					s.ev.index = -1
					got = "wait"
					if l.push(s.key, s.ev) {
						got = "start"
					}
				case "head":
					if h, ok := l.head(s.key); ok {
						got = h.order.Code
					}
				case "pop":
					l.pop(s.key)
				case "drop":
					l.drop(s.key)
				}
				// Those waiting for room wake when, and only when, events left.
				signalled := false
				select {
				case <-freed:
					signalled = true
				default:
				}
				if signalled != (s.n < prev) {
					t.Errorf("step %d %s %s: room signalled %v, %d held before and %d after", i, s.op, s.key, signalled, prev, s.n)
				}
				prev = s.n
				if n, _ := l.room(max); n != max-s.n {
					t.Errorf("step %d: room %d, want %d", i, n, max-s.n)
				}
				if got != s.want {
					t.Errorf("step %d %s %s: got %q, want %q", i, s.op, s.key, got, s.want)
				}
				want := time.Time{}
				if s.old >= 0 {
					want = t0.Add(time.Duration(s.old) * time.Minute)
				}
				if n, old := l.len(), l.oldest(); n != s.n || !old.Equal(want) || len(l.all()) != s.n {
					t.Errorf("step %d %s %s: %d held, oldest %v; want %d, %v", i, s.op, s.key, n, old, s.n, want)
				}
			}
		})
	}
}

// waitRoom returns once an event leaves a full set of lanes, or when its
// context ends. In a bubble "still waiting" is exact: synctest.Wait
// returns once the waiter is blocked for good.
func TestLanesWaitRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLanes()
		l.push("a", &held{at: time.Now()})
		if err := l.waitRoom(context.Background(), 2); err != nil {
			t.Fatalf("waitRoom with room: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := l.waitRoom(ctx, 1); err == nil {
			t.Fatal("waitRoom on full lanes returned nil after its context ended")
		}
		done := make(chan error, 1)
		go func() { done <- l.waitRoom(context.Background(), 1) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("waitRoom on full lanes returned %v before an event left", err)
		default:
		}
		l.pop("a")
		if err := <-done; err != nil {
			t.Fatalf("waitRoom after a pop: %v", err)
		}
	})
}
