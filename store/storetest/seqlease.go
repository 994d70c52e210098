package storetest

import (
	"context"
	"testing"
	"time"
)

// testFetchSeqLease: a process alone is granted the fetch sequence's lease
// and renews it; once it releases the lease, the next process takes
// numbers without waiting and is granted the lease itself; a process that
// takes numbers while another's lease runs is refused it and told to wait
// for its end, which a release by a process that does not hold it leaves
// in place. Numbers grow throughout. The lease outlives the test, so no
// clock decides anything.
func testFetchSeqLease(t *testing.T, s Store) {
	ctx := context.Background()
	const ttl = time.Hour
	var last int64
	lease := func(holder string) (until, wait time.Time) {
		t.Helper()
		first, until, wait, err := s.LeaseFetchSeq(ctx, holder, 10, ttl)
		if err != nil {
			t.Fatalf("LeaseFetchSeq(%s): %v", holder, err)
		}
		if first <= last {
			t.Fatalf("LeaseFetchSeq(%s) = %d, not above %d", holder, first, last)
		}
		last = first + 9
		return until, wait
	}
	release := func(holder string) {
		t.Helper()
		if err := s.ReleaseFetchSeq(ctx, holder); err != nil {
			t.Fatalf("ReleaseFetchSeq(%s): %v", holder, err)
		}
	}
	for _, bad := range []struct {
		holder string
		n      int
		ttl    time.Duration
	}{{"", 1, ttl}, {"p", 0, ttl}, {"p", 1, 0}} {
		if _, _, _, err := s.LeaseFetchSeq(ctx, bad.holder, bad.n, bad.ttl); err == nil {
			t.Errorf("LeaseFetchSeq(%q, %d, %v) succeeded", bad.holder, bad.n, bad.ttl)
		}
	}
	if err := s.ReleaseFetchSeq(ctx, ""); err == nil {
		t.Error("ReleaseFetchSeq without a holder succeeded")
	}
	release("nobody") // holds nothing: releases nothing, and no error

	until, wait := lease("p")
	if until.IsZero() || !wait.IsZero() {
		t.Fatalf("alone: until %v, wait %v; want the lease, no wait", until, wait)
	}
	renewed, wait := lease("p")
	if renewed.Before(until) || !wait.IsZero() {
		t.Fatalf("renewal: until %v (was %v), wait %v; want no earlier end, no wait", renewed, until, wait)
	}
	release("p")
	qUntil, qWait := lease("q")
	if qUntil.IsZero() || !qWait.IsZero() {
		t.Fatalf("the next process after a release: until %v, wait %v; want the lease, no wait", qUntil, qWait)
	}
	release("p") // no longer the holder
	rUntil, rWait := lease("r")
	if !rUntil.IsZero() || rWait.Sub(qUntil).Abs() > time.Millisecond {
		t.Fatalf("another process during the lease: until %v, wait %v; want no lease, wait until %v", rUntil, rWait, qUntil)
	}
	cur, err := s.CurrentFetchSeq(ctx)
	if err != nil || cur != last {
		t.Fatalf("CurrentFetchSeq = %d, %v; want %d", cur, err, last)
	}
}
