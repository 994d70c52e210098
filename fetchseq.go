package ordersync

import (
	"context"
	"time"
)

// FetchSequence is the mirror's sequence of fetch numbers (ApplyParams.Seq),
// shared by every process on the database. A process hands numbers out of
// a reservation it takes with LeaseFetchSeq, under the sequence's lease
// while it is alone, and gives the lease back with ReleaseFetchSeq when
// it stops, so that the next process does not wait for it to run out.
type FetchSequence interface {
	// AllocateFetchSeq reserves n consecutive fetch sequence numbers and
	// returns the first. Every number is greater than any handed out
	// before, by any process sharing the database. It takes no part in
	// the lease: a process that hands numbers out to fetches reserves
	// them with LeaseFetchSeq.
	AllocateFetchSeq(ctx context.Context, n int) (int64, error)
	// CurrentFetchSeq reads the highest fetch sequence number handed out
	// without writing. With it, fetch numbers are handed out from a
	// reservation while a read shows no other process took one since.
	CurrentFetchSeq(ctx context.Context) (int64, error)
	// LeaseFetchSeq reserves n consecutive fetch sequence numbers for
	// holder (one name per process) and returns the first. With them it
	// may grant the sequence's lease: until is when it ends (zero when not
	// granted), and until then no other process uses a number it takes,
	// so the holder may hand out its reserved numbers without reading the
	// sequence. A caller that finds another's lease running revokes it
	// and must not use its numbers before wait, when that lease ends
	// (zero: at once). The lease is granted (or renewed) when no other
	// lease is running and either holder took numbers last or nobody took
	// any for a while (store.DB: 10 s).
	LeaseFetchSeq(ctx context.Context, holder string, n int, ttl time.Duration) (first int64, until, wait time.Time, err error)
	// ReleaseFetchSeq ends holder's lease, if it still holds it, and
	// forgets that holder took numbers last: the holder hands out no more
	// numbers, so the next process's reservation neither waits for the
	// lease nor is refused one. A holder without a lease releases nothing.
	ReleaseFetchSeq(ctx context.Context, holder string) error
}
