package worker

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// seqStore is the fake or store.DB seen as a Mirror only.
type seqStore = ordersync.Mirror

// gatedMirror is a mirror that never grants the fetch sequence's lease
// (as when several processes take numbers in turn), so the allocator
// reads the sequence; it counts reservations, holding the first one until
// release is closed, and reads of the sequence. Its reservations take no
// part in the lease (AllocateFetchSeq).
type gatedMirror struct {
	seqStore
	calls   atomic.Int32
	reads   atomic.Int32
	release chan struct{}
}

func (g *gatedMirror) CurrentFetchSeq(ctx context.Context) (int64, error) {
	g.reads.Add(1)
	return g.seqStore.CurrentFetchSeq(ctx)
}

func (g *gatedMirror) LeaseFetchSeq(ctx context.Context, _ string, n int, _ time.Duration) (int64, time.Time, time.Time, error) {
	if g.calls.Add(1) == 1 {
		<-g.release
	}
	first, err := g.seqStore.AllocateFetchSeq(ctx, n)
	return first, time.Time{}, time.Time{}, err
}

// TestSeqAllocatorGroupsWaiters: callers that queue while a round trip is
// running share the next one, and every number is distinct.
func TestSeqAllocatorGroupsWaiters(t *testing.T) {
	const waiters = 200
	m := &gatedMirror{seqStore: fake.NewStore(), release: make(chan struct{})}
	a := newSeqAllocator(m)

	var wg sync.WaitGroup
	seqs := make(chan int64, waiters+1)
	get := func() {
		defer wg.Done()
		s, err := a.next(context.Background(), nil)
		if err != nil {
			t.Errorf("next: %v", err)
			return
		}
		seqs <- s
	}
	wg.Add(1)
	go get() // leads the first round trip, which is held
	for m.calls.Load() == 0 {
		time.Sleep(time.Millisecond) // polls; decides nothing
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
		time.Sleep(time.Millisecond) // polls; decides nothing
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
	// The first round trip reserved numbers; the second took the group's
	// from them after one read.
	if w, r := m.calls.Load(), m.reads.Load(); w != 1 || r != 1 {
		t.Errorf("%d writes and %d reads for %d callers, want one of each", w, r, waiters+1)
	}
}

// TestSeqAllocatorCallerGivesUp: a waiting caller whose context ends returns
// at once; the others are still served.
func TestSeqAllocatorCallerGivesUp(t *testing.T) {
	m := &gatedMirror{seqStore: fake.NewStore(), release: make(chan struct{})}
	a := newSeqAllocator(m)

	leader := make(chan error, 1)
	go func() { _, err := a.next(context.Background(), nil); leader <- err }()
	for m.calls.Load() == 0 {
		time.Sleep(time.Millisecond) // polls; decides nothing
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.next(ctx, nil); err == nil {
		t.Error("next with a cancelled context succeeded while the round trip was held")
	}
	close(m.release)
	if err := <-leader; err != nil {
		t.Errorf("leader: %v", err)
	}
	if _, err := a.next(context.Background(), nil); err != nil {
		t.Errorf("next after: %v", err)
	}
}

var _ ordersync.Mirror = (*gatedMirror)(nil)

// TestSeqAllocatorAcrossProcesses: two allocators on two handles of one
// SQLite file, as two processes would have, called one after the other in
// a shuffled order. Every number must be higher than every number handed
// out before the call began, by either: a fetch that starts later never
// gets a lower number. Alone, an allocator writes once for many calls.
func TestSeqAllocatorAcrossProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "seq.db")
	open := func() *store.DB {
		db, err := store.Open(context.Background(), store.Config{URL: path})
		if err != nil {
			t.Fatalf("store.Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	tests := []struct {
		name       string
		mirror     func() (ordersync.Mirror, *atomic.Int32)
		wantWrites func(calls int) bool
	}{
		{"reads the sequence", func() (ordersync.Mirror, *atomic.Int32) {
			m := &gatedMirror{seqStore: open(), release: make(chan struct{})}
			close(m.release)
			return m, &m.calls
		}, func(calls int) bool { return calls <= 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			m1, writes := tt.mirror()
			m2, _ := tt.mirror()
			alone := newSeqAllocator(m1)
			var highest int64
			for range 50 {
				s, err := alone.next(ctx, nil)
				if err != nil {
					t.Fatalf("next: %v", err)
				}
				highest = max(highest, s)
			}
			if w := int(writes.Load()); !tt.wantWrites(w) {
				t.Errorf("%d writes for 50 calls alone", w)
			}

			allocs := []*seqAllocator{alone, newSeqAllocator(m2)}
			order := rand.New(rand.NewPCG(1, 2))
			for i := range 300 {
				who := order.IntN(2)
				s, err := allocs[who].next(ctx, nil)
				if err != nil {
					t.Fatalf("call %d: next: %v", i, err)
				}
				if s <= highest {
					t.Fatalf("call %d: allocator %d handed out %d, not above %d handed out before", i, who, s, highest)
				}
				highest = s
			}
		})
	}
}

// orderUpstream answers every fetch with an order of the code asked for.
type orderUpstream struct{ refusingUpstream }

func (orderUpstream) GetOrder(_ context.Context, code string) (*ordersync.Order, error) {
	return &ordersync.Order{OrderCode: code}, nil
}

// TestOneSequenceReservationPerProcess: the fetches of every account of a
// process take their numbers from the process's one reservation (the
// MirrorWriter's), so two accounts fetching in turn do not take each
// other's reservations for another process's and write a new one each
// time.
func TestOneSequenceReservationPerProcess(t *testing.T) {
	m := &gatedMirror{seqStore: fake.NewStore(), release: make(chan struct{})}
	close(m.release)
	writer, err := NewMirrorWriter(MirrorWriterConfig{Mirror: m})
	if err != nil {
		t.Fatal(err)
	}
	var syncers []*Syncer
	for range 2 {
		s, err := NewSyncer(SyncerConfig{Upstream: orderUpstream{}, Mirror: m, Writer: writer})
		if err != nil {
			t.Fatal(err)
		}
		syncers = append(syncers, s)
	}
	var last int64
	for i := range 40 {
		res, err := syncers[i%2].fetch(context.Background(), "CODE", fetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.seq <= last {
			t.Fatalf("fetch %d got %d, not above %d", i, res.seq, last)
		}
		last = res.seq
	}
	if n := m.calls.Load(); n != 1 {
		t.Errorf("%d reservations written for 40 fetches of two accounts, want 1", n)
	}
}

// leaseCounting is store.DB counting its leases (writes) and reads of the
// fetch sequence.
type leaseCounting struct {
	*store.DB
	leases, reads atomic.Int32
}

func (l *leaseCounting) LeaseFetchSeq(ctx context.Context, holder string, n int, ttl time.Duration) (int64, time.Time, time.Time, error) {
	l.leases.Add(1)
	return l.DB.LeaseFetchSeq(ctx, holder, n, ttl)
}

func (l *leaseCounting) CurrentFetchSeq(ctx context.Context) (int64, error) {
	l.reads.Add(1)
	return l.DB.CurrentFetchSeq(ctx)
}

// TestSeqAllocatorLeaseAcrossProcesses: alone, an allocator whose mirror
// leases the sequence reads it never and writes once for many calls; two
// processes' allocators on one database, called in turn in a shuffled
// order, still hand out every number above every one handed out before
// the call began, the lease passing between them.
func TestSeqAllocatorLeaseAcrossProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "seq.db")
	open := func() *leaseCounting {
		db, err := store.Open(context.Background(), store.Config{URL: path})
		if err != nil {
			t.Fatalf("store.Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return &leaseCounting{DB: db}
	}
	alloc := func(m *leaseCounting) *seqAllocator {
		a := newSeqAllocator(m)
		a.ttl, a.margin = 200*time.Millisecond, 50*time.Millisecond
		return a
	}
	ctx := context.Background()
	m1, m2 := open(), open()
	alone := alloc(m1)
	var highest int64
	for range 50 {
		s, err := alone.next(ctx, nil)
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		highest = max(highest, s)
	}
	if l, r := m1.leases.Load(), m1.reads.Load(); l != 1 || r != 0 {
		t.Errorf("alone, 50 calls made %d leases and %d reads, want 1 and none", l, r)
	}

	allocs := []*seqAllocator{alone, alloc(m2)}
	order := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		who := order.IntN(2)
		s, err := allocs[who].next(ctx, nil)
		if err != nil {
			t.Fatalf("call %d: next: %v", i, err)
		}
		if s <= highest {
			t.Fatalf("call %d: allocator %d handed out %d, not above %d handed out before", i, who, s, highest)
		}
		highest = s
	}
	// Concurrently: every number is distinct.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]bool{}
	)
	for w := range 4 {
		wg.Go(func() {
			for range 50 {
				s, err := allocs[w%2].next(ctx, nil)
				if err != nil {
					t.Errorf("next: %v", err)
					return
				}
				mu.Lock()
				if seen[s] || s <= highest {
					t.Errorf("number %d handed out twice or not above %d", s, highest)
				}
				seen[s] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// leaseWaits is store.DB remembering what its last lease told the caller.
type leaseWaits struct {
	*store.DB
	mu          sync.Mutex
	until, wait time.Time
}

func (l *leaseWaits) LeaseFetchSeq(ctx context.Context, holder string, n int, ttl time.Duration) (int64, time.Time, time.Time, error) {
	first, until, wait, err := l.DB.LeaseFetchSeq(ctx, holder, n, ttl)
	l.mu.Lock()
	l.until, l.wait = until, wait
	l.mu.Unlock()
	return first, until, wait, err
}

// TestSeqAllocatorCloseReleasesLease: a process's allocator that took the
// fetch sequence's lease gives it back when closed, so the next process's
// allocator on the database (a serve started after a CLI command, a
// rolling restart's successor) is granted the lease and told to wait for
// nobody, rather than waiting up to the lease's 2 s for it to run out.
// What the successor is told, not a clock, decides.
func TestSeqAllocatorCloseReleasesLease(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "seq.db") }},
		{"postgres", func(t *testing.T) string { return testdb.Services(t).DatabaseURL }},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			url := d.url(t)
			open := func() *leaseWaits {
				db, err := store.Open(context.Background(), store.Config{URL: url})
				if err != nil {
					t.Fatalf("store.Open: %v", err)
				}
				t.Cleanup(func() { db.Close() })
				return &leaseWaits{DB: db}
			}
			ctx := context.Background()
			first, second := open(), open()
			a := newSeqAllocator(first)
			if _, err := a.next(ctx, nil); err != nil {
				t.Fatalf("next: %v", err)
			}
			if first.until.IsZero() {
				t.Fatal("the first allocator, alone, was not granted the lease")
			}
			if err := a.close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			if _, err := a.next(ctx, nil); err == nil {
				t.Error("next after close succeeded")
			}
			b := newSeqAllocator(second)
			if _, err := b.next(ctx, nil); err != nil {
				t.Fatalf("successor's next: %v", err)
			}
			if !second.wait.IsZero() || second.until.IsZero() {
				t.Errorf("successor after close: told to wait until %v (%v from now), lease until %v; want no wait and the lease",
					second.wait, time.Until(second.wait).Round(time.Millisecond), second.until)
			}
		})
	}
}
