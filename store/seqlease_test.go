package store

import (
	"context"
	"testing"
	"time"
)

// TestLeaseFetchSeq: the lease goes to a process alone and is renewed by
// it; another process taking numbers while it runs revokes it and is told
// to wait for its end, as is the revoked holder; after it, the process
// that took numbers last gets the lease again. Numbers grow throughout.
func TestLeaseFetchSeq(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		const ttl = 300 * time.Millisecond
		var last int64
		lease := func(holder string, n int) (time.Time, time.Time) {
			t.Helper()
			first, until, wait, err := db.LeaseFetchSeq(ctx, holder, n, ttl)
			if err != nil {
				t.Fatalf("LeaseFetchSeq(%s): %v", holder, err)
			}
			if first <= last {
				t.Fatalf("LeaseFetchSeq(%s) = %d, not above %d", holder, first, last)
			}
			last = first + int64(n) - 1
			return until, wait
		}
		if _, _, _, err := db.LeaseFetchSeq(ctx, "", 1, ttl); err == nil {
			t.Error("LeaseFetchSeq without a holder succeeded")
		}
		until, wait := lease("p", 10)
		if until.IsZero() || !wait.IsZero() {
			t.Fatalf("alone: until %v, wait %v; want the lease, no wait", until, wait)
		}
		renewed, wait := lease("p", 10)
		if !renewed.After(until) || !wait.IsZero() {
			t.Fatalf("renewal: until %v (was %v), wait %v; want a later end, no wait", renewed, until, wait)
		}
		qUntil, qWait := lease("q", 10)
		if !qUntil.IsZero() || qWait.Sub(renewed).Abs() > time.Millisecond {
			t.Fatalf("another process during the lease: until %v, wait %v; want no lease, wait until %v", qUntil, qWait, renewed)
		}
		pUntil, pWait := lease("p", 10)
		if !pUntil.IsZero() || pWait.Sub(renewed).Abs() > time.Millisecond {
			t.Fatalf("the revoked holder: until %v, wait %v; want no lease, wait until %v", pUntil, pWait, renewed)
		}
		// The lease's own end is the subject, kept on the database's
		// clock, which only real time moves.
		time.Sleep(time.Until(renewed))
		if until, wait := lease("q", 10); !until.IsZero() || !wait.IsZero() {
			t.Fatalf("after the lease, another process having taken numbers last: until %v, wait %v; want neither", until, wait)
		}
		if until, wait := lease("q", 10); until.IsZero() || !wait.IsZero() {
			t.Fatalf("taking numbers twice in a row: until %v, wait %v; want the lease", until, wait)
		}
		cur, err := db.CurrentFetchSeq(ctx)
		if err != nil || cur != last {
			t.Fatalf("CurrentFetchSeq = %d, %v; want %d", cur, err, last)
		}
	})
}
