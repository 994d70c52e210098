package worker

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/store"
)

// gatedMirror is the real store, counting AllocateFetchSeq round trips and
// holding the first one until release is closed.
type gatedMirror struct {
	*store.DB
	calls   atomic.Int32
	release chan struct{}
}

func (g *gatedMirror) AllocateFetchSeq(ctx context.Context, n int) (int64, error) {
	if g.calls.Add(1) == 1 {
		<-g.release
	}
	return g.DB.AllocateFetchSeq(ctx, n)
}

// TestSeqAllocatorGroupsWaiters: callers that queue while a round trip is
// running share the next one, and every number is distinct.
func TestSeqAllocatorGroupsWaiters(t *testing.T) {
	const waiters = 200
	db, err := store.Open(context.Background(), store.Config{URL: filepath.Join(t.TempDir(), "seq.db")})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	m := &gatedMirror{DB: db, release: make(chan struct{})}
	a := newSeqAllocator(m)

	var wg sync.WaitGroup
	seqs := make(chan int64, waiters+1)
	get := func() {
		defer wg.Done()
		s, err := a.next(context.Background())
		if err != nil {
			t.Errorf("next: %v", err)
			return
		}
		seqs <- s
	}
	wg.Add(1)
	go get() // leads the first round trip, which is held
	for m.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	wg.Add(waiters)
	for range waiters {
		go get()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a.mu.Lock()
		n := 0
		if a.forming != nil {
			n = a.forming.n
		}
		a.mu.Unlock()
		if n == waiters {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d callers queued", n)
		}
		time.Sleep(time.Millisecond)
	}
	close(m.release)
	wg.Wait()
	close(seqs)

	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Errorf("sequence %d handed out twice", s)
		}
		seen[s] = true
	}
	if len(seen) != waiters+1 {
		t.Errorf("%d sequences, want %d", len(seen), waiters+1)
	}
	if c := m.calls.Load(); c != 2 {
		t.Errorf("%d round trips for %d callers, want 2", c, waiters+1)
	}
}

// TestSeqAllocatorCallerGivesUp: a waiting caller whose context ends returns
// at once; the others are still served.
func TestSeqAllocatorCallerGivesUp(t *testing.T) {
	db, err := store.Open(context.Background(), store.Config{URL: filepath.Join(t.TempDir(), "seq.db")})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	m := &gatedMirror{DB: db, release: make(chan struct{})}
	a := newSeqAllocator(m)

	leader := make(chan error, 1)
	go func() { _, err := a.next(context.Background()); leader <- err }()
	for m.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.next(ctx); err == nil {
		t.Error("next with a cancelled context succeeded while the round trip was held")
	}
	close(m.release)
	if err := <-leader; err != nil {
		t.Errorf("leader: %v", err)
	}
	if _, err := a.next(context.Background()); err != nil {
		t.Errorf("next after: %v", err)
	}
}

var _ ordersync.Mirror = (*gatedMirror)(nil)
