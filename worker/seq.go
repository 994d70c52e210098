package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// seqAllocTimeout bounds one shared round trip to the mirror. The round trip
// serves every caller waiting in its group, so it does not stop when the
// caller that happens to lead it gives up; the bound keeps a stuck database
// from holding that caller forever.
const seqAllocTimeout = 30 * time.Second

// seqReserve is how many sequence numbers a reservation takes beyond what
// its callers need.
const seqReserve = 1024

// seqLeaseTTL is how long a reservation holds the fetch sequence's lease,
// and seqLeaseMargin how long before its end the holder stops handing out
// numbers under it: another process that took numbers meanwhile waits for
// the end by its own clock, which may run up to the margin behind.
const (
	seqLeaseTTL    = 2 * time.Second
	seqLeaseMargin = 500 * time.Millisecond
)

// seqAllocator hands out fetch sequence numbers. Callers that ask while a
// round trip to the mirror is running wait together and are served by the
// next one: at most one round trip is in flight, and under load each one
// serves everybody who queued during the previous one.
//
// A round trip's write reserves seqReserve numbers more than its callers
// need, and later groups take the next ones from that reservation
// after a read has shown the sequence still ends where the reservation
// left it, so no other process took a number since. The numbers are taken
// before that read starts, so every number handed out was still the
// highest anybody held at some moment after its caller asked: a fetch that
// asked later, here or in another process, gets a higher one, as with a
// write per group. On SQLite the read does not queue behind the single
// write connection, whose transactions would otherwise hold every fetch
// back while they commit.
//
// The sequence's lease (ordersync.FetchSequence) spares even that read: a
// reservation that was granted the lease is handed out without reading
// until shortly before the lease ends, since another process that takes
// numbers meanwhile revokes the lease and waits for its end before using
// them. So the sequence is read only after the lease was lost or not
// granted (several processes taking numbers), as above.
type seqAllocator struct {
	mirror ordersync.FetchSequence
	holder string // this allocator's name in the lease
	ttl    time.Duration
	margin time.Duration

	mu sync.Mutex
	// forming collects the callers of the next round trip.
	forming *seqGroup
	// running is closed when the round trip in flight finishes; nil or
	// closed when none is.
	running chan struct{}
	// from..to are reserved numbers not handed out yet; to is the value the
	// reservation left the sequence at. Empty when from > to.
	from, to int64
	// leaseUntil is when the reservation's lease ends; zero when it has
	// none.
	leaseUntil time.Time
	// closed: close was called; next hands out no more numbers.
	closed bool
}

type seqGroup struct {
	n int
	// previous is the round trip that was running when the group formed;
	// the group's own starts after it.
	previous <-chan struct{}
	done     chan struct{}
	first    int64
	err      error
}

func newSeqAllocator(m ordersync.FetchSequence) *seqAllocator {
	a := &seqAllocator{mirror: m, from: 1, ttl: seqLeaseTTL, margin: seqLeaseMargin}
	host, _ := os.Hostname()
	a.holder = fmt.Sprintf("%s/%d/%016x", host, os.Getpid(), rand.Uint64())
	return a
}

// next returns a fetch sequence number greater than every one handed out
// before, by this process or any other sharing the database. A fetch takes
// it after every wait, immediately before its request leaves, so next first
// calls leaving, when set (fetchOptions.leaving): the pool's round stops
// taking events there.
func (a *seqAllocator) next(ctx context.Context, leaving func()) (int64, error) {
	if leaving != nil {
		leaving()
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return 0, errSeqClosed
	}
	g := a.forming
	if g == nil {
		g = &seqGroup{previous: a.running, done: make(chan struct{})}
		a.forming = g
	}
	idx := g.n
	g.n++
	a.mu.Unlock()

	// The group keeps filling while the previous round trip runs.
	if g.previous != nil {
		select {
		case <-g.previous:
		case <-g.done:
		case <-ctx.Done():
			return 0, ctx.Err() // idx stays unused: a gap, which is harmless
		}
	}
	a.mu.Lock()
	if a.forming == g && a.closed {
		a.forming = nil
		g.err = errSeqClosed
		close(g.done)
		a.mu.Unlock()
	} else if a.forming == g {
		// Nobody has sent the group's round trip yet: this caller does.
		a.forming = nil
		a.running = g.done
		n := g.n
		a.mu.Unlock()
		rtCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), seqAllocTimeout)
		g.first, g.err = a.roundTrip(rtCtx, n)
		cancel()
		close(g.done)
	} else {
		a.mu.Unlock()
		select {
		case <-g.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.first + int64(idx), nil
}

// roundTrip takes n consecutive numbers for a group and returns the first.
// Only the group's leader runs it, one at a time.
func (a *seqAllocator) roundTrip(ctx context.Context, n int) (int64, error) {
	a.mu.Lock()
	from, last := a.from, a.to
	enough := from+int64(n)-1 <= last
	leased := enough && time.Now().Before(a.leaseUntil.Add(-a.margin))
	// A lease near its end is renewed by the next reservation rather than
	// followed by reads.
	renew := !leased && !a.leaseUntil.IsZero()
	if enough && !renew {
		a.from += int64(n)
	}
	a.mu.Unlock()
	if leased {
		return from, nil
	}
	if enough && !renew {
		cur, err := a.mirror.CurrentFetchSeq(ctx)
		if err != nil {
			return 0, fmt.Errorf("read the fetch sequence: %w", err)
		}
		if cur == last {
			return from, nil
		}
		// Another process reserved since: what is left is stale.
	}
	reserve := n + seqReserve
	first, until, wait, err := a.mirror.LeaseFetchSeq(ctx, a.holder, reserve, a.ttl)
	if err != nil {
		return 0, fmt.Errorf("allocate %d fetch sequences: %w", reserve, err)
	}
	a.mu.Lock()
	a.from, a.to = first+int64(n), first+int64(reserve)-1
	a.leaseUntil = until
	a.mu.Unlock()
	// Another process's lease was running: it may hand out lower numbers
	// until it ends.
	if d := time.Until(wait); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for another process's fetch sequence lease to end: %w", ctx.Err())
		}
	}
	return first, nil
}

var errSeqClosed = errors.New("the fetch sequence allocator is closed")

// close stops handing out numbers and, once the round trip in flight (if
// any) has returned, gives the sequence's lease back: the next process to
// take numbers, a serve started after a CLI command or a rolling restart's
// successor, then neither waits up to seqLeaseTTL for the lease to run
// out nor is refused the lease. Numbers already handed out stay below
// every number taken after.
func (a *seqAllocator) close(ctx context.Context) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	running := a.running
	a.from, a.to, a.leaseUntil = 1, 0, time.Time{}
	a.mu.Unlock()
	if running != nil {
		select {
		case <-running:
		case <-ctx.Done():
			return fmt.Errorf("release the fetch sequence's lease: %w", ctx.Err())
		}
	}
	if err := a.mirror.ReleaseFetchSeq(ctx, a.holder); err != nil {
		return fmt.Errorf("release the fetch sequence's lease: %w", err)
	}
	return nil
}
