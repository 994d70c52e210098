package worker

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// yieldRead is one read of Pressure in a yieldLoop test: what it returns,
// and how long it takes (a read the scheduler runs late).
type yieldRead struct {
	wait time.Duration
	n    int64
	late time.Duration
}

// runYieldLoop runs yieldLoop for a pool of 16 fetches reading Pressure
// every 20ms in a synctest bubble. Each read returns the next of reads
// (then no webhooks) and records the limit the previous decision set and
// the time since the loop started; pull signals a pull that brought events
// before that read.
func runYieldLoop(t *testing.T, reads []yieldRead, pull map[int]bool) (limits []int, at []time.Duration) {
	t.Helper()
	const interval = 20 * time.Millisecond
	m, err := newPoolMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p := &Pool{
		cfg: PoolConfig{
			FetchConcurrency: 16, PressureTarget: 2 * time.Millisecond,
			PressureInterval: interval, PressureMinRate: 2000,
		},
		metrics: m,
		slots:   newFetchSlots(16),
		pulled:  make(chan struct{}, 1),
	}
	start := time.Now()
	read := make(chan int)
	p.cfg.Pressure = func() (time.Duration, int64) {
		i := len(limits)
		at = append(at, time.Since(start))
		p.slots.mu.Lock()
		limits = append(limits, p.slots.limit)
		p.slots.mu.Unlock()
		read <- i
		if i >= len(reads) {
			return 0, 0
		}
		time.Sleep(reads[i].late) // the bubble's clock: a read the scheduler runs late
		return reads[i].wait, reads[i].n
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.yieldLoop(ctx); close(done) }()
	for i := 0; i <= len(reads); {
		if pull[i] {
			// The loop sleeps until this pull wakes it: nothing else is due
			// before its idle read.
			synctest.Wait()
			p.pulled <- struct{}{}
		}
		if got := <-read; got != i {
			t.Fatalf("read %d, want %d", got, i)
		}
		i++
	}
	cancel()
	<-done
	return limits, at
}

// TestYieldLoopIdleReadsRarely: while no webhook is answered, the pool
// reads the publish wait every tenth interval, not every interval.
func TestYieldLoopIdleReadsRarely(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, at := runYieldLoop(t, []yieldRead{{}, {}, {}}, nil)
		want := []time.Duration{20 * time.Millisecond, 220 * time.Millisecond, 420 * time.Millisecond, 620 * time.Millisecond}
		if !slices.Equal(at, want) {
			t.Errorf("idle reads at %v, want %v", at, want)
		}
	})
}

// TestYieldLoopYieldsAtOnceAfterIdling: the first read of the publish wait
// after an idle spell comes within a pull's round trip of the first
// webhooks, too few to tell a flood from a burst, and is taken for a
// flood: the pool halves its fetches at once when their wait is high, and
// the next read, at a burst's rate, takes them back.
func TestYieldLoopYieldsAtOnceAfterIdling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		high := yieldRead{wait: 10 * time.Millisecond, n: 1}
		limits, at := runYieldLoop(t, []yieldRead{{}, high, high, high}, map[int]bool{1: true})
		if at[1] != at[0] {
			t.Errorf("the pull woke the read after %v, want at once", at[1]-at[0])
		}
		// Each read sees the limit the one before it set.
		if want := []int{16, 16, 8, 16, 16}; !slices.Equal(limits, want) {
			t.Errorf("limits at each read %v, want %v: halved at the first read after the idle spell, then full at a burst's rate", limits, want)
		}
	})
}

// TestYieldLoopRateIsOverAnInterval: a read the scheduler runs late is
// followed by the next one an interval after it, not at the ticker's next
// beat: a webhook counted over a fraction of an interval is not a flood.
func TestYieldLoopRateIsOverAnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		high := yieldRead{wait: 10 * time.Millisecond, n: 1}
		late := high
		late.late = 19900 * time.Microsecond
		limits, at := runYieldLoop(t, []yieldRead{high, late, high, high}, nil)
		if got, want := at[2]-at[1], late.late+20*time.Millisecond; got != want {
			t.Errorf("the read after a late one came %v after it started, want %v", got, want)
		}
		if want := []int{16, 16, 16, 16, 16}; !slices.Equal(limits, want) {
			t.Errorf("limits at each read %v, want %v: one webhook a read is a burst's rate, however late a read ran", limits, want)
		}
	})
}
