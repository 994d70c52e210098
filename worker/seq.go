package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// seqAllocTimeout bounds one shared AllocateFetchSeq round trip. The round
// trip serves every caller waiting in its group, so it does not stop when the
// caller that happens to lead it gives up; the bound keeps a stuck database
// from holding that caller forever.
const seqAllocTimeout = 30 * time.Second

// seqAllocator hands out fetch sequence numbers. Callers that ask while a
// round trip to the mirror is running wait together and are served by the
// next single AllocateFetchSeq(n): at most one round trip is in flight, and
// under load each one serves everybody who queued during the previous one.
type seqAllocator struct {
	mirror ordersync.Mirror

	mu sync.Mutex
	// forming collects the callers of the next round trip.
	forming *seqGroup
	// running is closed when the round trip in flight finishes; nil or
	// closed when none is.
	running chan struct{}
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

func newSeqAllocator(m ordersync.Mirror) *seqAllocator {
	return &seqAllocator{mirror: m}
}

// next returns a fetch sequence number greater than every one handed out
// before, by this process or any other sharing the database.
func (a *seqAllocator) next(ctx context.Context) (int64, error) {
	a.mu.Lock()
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
	if a.forming == g {
		// Nobody has sent the group's round trip yet: this caller does.
		a.forming = nil
		a.running = g.done
		n := g.n
		a.mu.Unlock()
		rtCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), seqAllocTimeout)
		g.first, g.err = a.mirror.AllocateFetchSeq(rtCtx, n)
		cancel()
		if g.err != nil {
			g.err = fmt.Errorf("allocate %d fetch sequences: %w", n, g.err)
		}
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
