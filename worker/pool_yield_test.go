package worker

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// tryAcquire takes a slot unless none comes within 20ms, on synctest's
// clock: the window is exact and costs no wall time.
func tryAcquire(s *fetchSlots) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return s.acquire(ctx) == nil
}

func TestFetchSlotsLimitMovesWhileFetchesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFetchSlots(4)
		for i := range 3 {
			if !tryAcquire(s) {
				t.Fatalf("acquire %d of 4 failed", i+1)
			}
		}
		// Three fetches run; the limit drops to one. The idle token goes at
		// once, and the running fetches' tokens as they end but the last.
		s.setLimit(1)
		if tryAcquire(s) {
			t.Fatal("acquired a slot with three running and the limit at one")
		}
		s.release()
		s.release()
		if tryAcquire(s) {
			t.Fatal("acquired a slot with one running and the limit at one")
		}
		s.release()
		if !tryAcquire(s) {
			t.Fatal("no slot with none running and the limit at one")
		}
		if tryAcquire(s) {
			t.Fatal("a second slot with the limit at one")
		}
		// At zero nothing starts; raised again, every slot comes back.
		s.setLimit(0)
		s.release()
		if tryAcquire(s) {
			t.Fatal("acquired a slot with the limit at zero")
		}
		s.setLimit(4)
		for i := range 4 {
			if !tryAcquire(s) {
				t.Fatalf("after raising the limit to 4, acquire %d failed", i+1)
			}
		}
		if tryAcquire(s) {
			t.Fatal("a fifth slot with the limit at four")
		}
	})
}
