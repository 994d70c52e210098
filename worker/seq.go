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
	n     int
	done  chan struct{}
	first int64
	err   error
}

func newSeqAllocator(m ordersync.Mirror) *seqAllocator {
	return &seqAllocator{mirror: m}
}

// next returns a fetch sequence number greater than every one handed out
// before, by this process or any other sharing the database.
func (a *seqAllocator) next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	g := a.forming
	leader := g == nil
	if leader {
		g = &seqGroup{done: make(chan struct{})}
		a.forming = g
	}
	idx := g.n
	g.n++
	previous := a.running
	a.mu.Unlock()

	if !leader {
		select {
		case <-g.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if g.err != nil {
			return 0, g.err
		}
		return g.first + int64(idx), nil
	}

	// The leader waits for the round trip in flight (bounded by
	// seqAllocTimeout), so that its group keeps filling meanwhile.
	if previous != nil {
		<-previous
	}
	a.mu.Lock()
	a.forming = nil
	a.running = g.done
	n := g.n
	a.mu.Unlock()

	rtCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), seqAllocTimeout)
	first, err := a.mirror.AllocateFetchSeq(rtCtx, n)
	cancel()
	if err != nil {
		err = fmt.Errorf("allocate %d fetch sequences: %w", n, err)
	}
	g.first, g.err = first, err
	close(g.done)
	if err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return first + int64(idx), nil
}
