package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// testTTL is short so failovers take seconds, and long enough that a
// renewal (every TTL/3, lost when it has not come back within 2/3 TTL)
// survives a machine loaded by the other test packages (at 1 s, one did
// not at a load average of 16).
const testTTL = 2 * time.Second

// backend opens connections to one NATS server: the embedded one, or the
// external server of ORDERSYNC_TEST_NATS_URL.
type backend struct {
	name string
	dial func(t *testing.T) *nats.Conn
}

// forEachBackend runs test in parallel against a fresh embedded server and,
// when ORDERSYNC_TEST_NATS_URL and ORDERSYNC_TEST_NATS_LEADER are set, the
// external server.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		e := startEmbedded(t, t.TempDir(), 0)
		test(t, backend{name: "embedded", dial: func(t *testing.T) *nats.Conn {
			t.Helper()
			return connect(t, e)
		}})
	})
	t.Run("external", func(t *testing.T) {
		url := os.Getenv("ORDERSYNC_TEST_NATS_URL")
		if url == "" || os.Getenv("ORDERSYNC_TEST_NATS_LEADER") == "" {
			// Lease renewals are timed (every TTL/3): run against an external
			// server only where the machine is not also busy with the other
			// packages' tests. .ci/run does, after the main test run.
			t.Skip("set ORDERSYNC_TEST_NATS_URL and ORDERSYNC_TEST_NATS_LEADER=1 to run the lease tests against an external NATS server")
		}
		t.Parallel()
		var logged sync.Once
		test(t, backend{name: "external", dial: func(t *testing.T) *nats.Conn {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			nc, err := Connect(ctx, ConnConfig{URL: url, Name: t.Name()})
			if err != nil {
				t.Fatalf("Connect %s: %v", url, err)
			}
			t.Cleanup(nc.Close)
			logged.Do(func() { t.Logf("external nats-server %s at %s", nc.ConnectedServerVersion(), url) })
			return nc
		}})
	})
}

// uniqueBucket names a bucket after a random token and deletes it when the
// test ends, so tests can share one external server.
func uniqueBucket(t *testing.T, nc *nats.Conn) string {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	bucket := "T" + hex.EncodeToString(b) + "_leaders"
	t.Cleanup(func() {
		js, err := jetstream.New(nc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		js.DeleteKeyValue(ctx, bucket)
	})
	return bucket
}

func newLeader(t *testing.T, nc *nats.Conn, cfg LeaderConfig) *Leader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := NewLeader(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("NewLeader: %v", err)
	}
	return l
}

// campaigner is one process competing for a role: its own connection,
// registry and Run.
type campaigner struct {
	nc     *nats.Conn
	l      *Leader
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result, set before done closes
	runs   atomic.Int32
	causes chan error // context.Cause of each ended leader function
}

// startCampaigners starts n campaigners for one role whose leader function
// blocks until its ctx ends. active counts functions running at once; max
// is the most ever seen.
func startCampaigners(t *testing.T, b backend, n int) ([]*campaigner, *atomic.Int32) {
	t.Helper()
	bucket := uniqueBucket(t, b.dial(t))
	var active, most atomic.Int32
	cs := make([]*campaigner, n)
	for i := range cs {
		c := &campaigner{nc: b.dial(t), reg: prometheus.NewRegistry(), causes: make(chan error, 10)}
		c.l = newLeader(t, c.nc, LeaderConfig{
			Bucket: bucket, Name: "relay", ID: fmt.Sprintf("campaigner-%d", i), TTL: testTTL, Registerer: c.reg,
		})
		cs[i] = c
	}
	for _, c := range cs {
		c.start(t, func(ctx context.Context) error {
			c.runs.Add(1)
			now := active.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			<-ctx.Done()
			active.Add(-1)
			c.causes <- context.Cause(ctx)
			return ctx.Err()
		})
	}
	return cs, &most
}

func (c *campaigner) start(t *testing.T, fn func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		c.err = c.l.Run(ctx, fn)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Run did not return after cancel", c.l.ID())
		}
	})
}

// waitLeader waits until exactly one campaigner other than except leads and
// returns it with the time it took.
func waitLeader(t *testing.T, cs []*campaigner, except *campaigner, within time.Duration) (*campaigner, time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		var leaders []*campaigner
		for _, c := range cs {
			if c.l.IsLeader() {
				leaders = append(leaders, c)
			}
		}
		if len(leaders) > 1 {
			t.Fatalf("%d campaigners lead at once", len(leaders))
		}
		if len(leaders) == 1 && leaders[0] != except {
			return leaders[0], time.Since(start)
		}
		time.Sleep(5 * time.Millisecond) // polls; decides nothing
	}
	t.Fatalf("no new leader within %s", within)
	return nil, 0
}

func gaugeValue(t *testing.T, c *campaigner) float64 {
	t.Helper()
	mfs, err := c.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ordersync_leader" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "relay" {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatal("ordersync_leader{role=\"relay\"} not registered")
	return 0
}

func TestLeaderConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		cfg       LeaderConfig
		wantField string
	}{
		{"no name", LeaderConfig{}, "Name"},
		{"name with space", LeaderConfig{Name: "re lay"}, "Name"},
		{"name ending in a dot", LeaderConfig{Name: "relay."}, "Name"},
		{"bucket with a dot", LeaderConfig{Name: "relay", Bucket: "a.b"}, "Bucket"},
		{"TTL too short", LeaderConfig{Name: "relay", TTL: 100 * time.Millisecond}, "TTL"},
		{"too many replicas", LeaderConfig{Name: "relay", Replicas: 6}, "Replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLeader(context.Background(), nil, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("NewLeader(%+v) = %v, want an error naming %s", tt.cfg, err, tt.wantField)
			}
		})
	}
}

// TestLeaderOneAtATime samples three campaigners for a while: never two
// leaders, a leader nearly all the time, the gauge following IsLeader, and
// never two leader functions running at once.
func TestLeaderOneAtATime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		cs, most := startCampaigners(t, b, 3)
		first, _ := waitLeader(t, cs, nil, 5*time.Second)
		// Samples over two lease TTLs, each holding several renewals and
		// an expiry's worth of time: the subject is the KV lease's own
		// timer (renewals and expiry), so real time.
		samples, led := 0, 0
		for end := time.Now().Add(2 * testTTL); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			n := 0
			for _, c := range cs {
				if c.l.IsLeader() {
					n++
				}
			}
			if n > 1 {
				t.Fatalf("sample %d: %d leaders at once", samples, n)
			}
			samples++
			led += n
		}
		if led < samples*90/100 {
			t.Fatalf("a leader in %d of %d samples, want at least 90%%", led, samples)
		}
		if most.Load() != 1 {
			t.Fatalf("at most %d leader functions ran at once, want 1", most.Load())
		}
		for _, c := range cs {
			want := 0.0
			if c.l.IsLeader() {
				want = 1
			}
			if got := gaugeValue(t, c); got != want {
				t.Errorf("%s: gauge %v, IsLeader %v", c.l.ID(), got, c.l.IsLeader())
			}
		}
		holder, err := first.l.Holder(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if holder != first.l.ID() || !first.l.IsLeader() {
			t.Fatalf("holder %q, first leader %s (still leading: %v)", holder, first.l.ID(), first.l.IsLeader())
		}
		t.Logf("%s: %d samples over %s, one leader in each", b.name, samples, 2*testTTL)
	})
}

// TestLeaderStopHandsOver stops the leader: it releases the lease and
// another campaigner leads within one campaign interval, well inside the TTL.
func TestLeaderStopHandsOver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		cs, most := startCampaigners(t, b, 3)
		old, _ := waitLeader(t, cs, nil, 5*time.Second)
		old.cancel()
		select {
		case <-old.done:
			if old.err != nil {
				t.Fatalf("stopped leader's Run = %v, want nil", old.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("stopped leader's Run did not return")
		}
		if cause := <-old.causes; !errors.Is(cause, context.Canceled) {
			t.Fatalf("stopped leader's function ended with cause %v, want context.Canceled", cause)
		}
		if old.l.IsLeader() || gaugeValue(t, old) != 0 {
			t.Fatalf("stopped leader: IsLeader %v, gauge %v", old.l.IsLeader(), gaugeValue(t, old))
		}
		next, took := waitLeader(t, cs, old, testTTL)
		t.Logf("%s: handover after a stop took %s (TTL %s)", b.name, took, testTTL)
		holder, err := next.l.Holder(context.Background())
		if err != nil || holder != next.l.ID() {
			t.Fatalf("Holder = %q, %v; want %s", holder, err, next.l.ID())
		}
		if most.Load() != 1 {
			t.Fatalf("%d leader functions ran at once", most.Load())
		}
	})
}

// TestLeaderKilledConnectionHandsOver closes the leader's connection
// without a release, as a dying process would: the lease expires and
// another campaigner leads after at most TTL plus a campaign interval.
func TestLeaderKilledConnectionHandsOver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		cs, _ := startCampaigners(t, b, 3)
		old, _ := waitLeader(t, cs, nil, 5*time.Second)
		old.nc.Close()
		next, took := waitLeader(t, cs, old, 3*testTTL)
		t.Logf("%s: handover after a killed connection took %s (TTL %s)", b.name, took, testTTL)
		// The lease was renewed at most TTL/3 before the kill, so it cannot
		// have expired sooner than about 2/3 TTL after: a quicker handover
		// would mean it was released or never held.
		if took < testTTL/2 {
			t.Fatalf("handover after %s, before the lease could expire", took)
		}
		// The slack absorbs a loaded machine's scheduling, not a lease
		// that failed to expire (that would take another TTL or more).
		if limit := testTTL + testTTL/3 + 750*time.Millisecond; took > limit {
			t.Fatalf("handover after %s, want at most TTL + campaign interval (%s, with 750ms slack)", took, limit)
		}
		select {
		case <-old.done:
			if !errors.Is(old.err, nats.ErrConnectionClosed) {
				t.Fatalf("killed leader's Run = %v, want nats.ErrConnectionClosed", old.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("killed leader's Run did not return")
		}
		cause := <-old.causes
		if !errors.Is(cause, ErrLeadershipLost) {
			t.Fatalf("killed leader's function ended with cause %v, want ErrLeadershipLost", cause)
		}
		// IsLeader turns true just before the leader's function starts.
		for deadline := time.Now().Add(2 * time.Second); next.runs.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond) // polls; decides nothing
		}
		if next.runs.Load() != 1 || old.l.IsLeader() {
			t.Fatalf("new leader ran %d times, old still leading: %v", next.runs.Load(), old.l.IsLeader())
		}
	})
}

// TestLeaderLossCancelsFunction takes the lease away behind the leader's
// back: its function's ctx is cancelled with ErrLeadershipLost within a
// renewal interval, and it campaigns again and leads anew.
func TestLeaderLossCancelsFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		take func(ctx context.Context, kv jetstream.KeyValue) error
	}{
		{"delete", func(ctx context.Context, kv jetstream.KeyValue) error { return kv.Delete(ctx, "relay") }},
		{"purge", func(ctx context.Context, kv jetstream.KeyValue) error { return kv.Purge(ctx, "relay") }},
		{"overwrite", func(ctx context.Context, kv jetstream.KeyValue) error {
			_, err := kv.Put(ctx, "relay", []byte("intruder"))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend) {
				cs, _ := startCampaigners(t, b, 1)
				c := cs[0]
				waitLeader(t, cs, nil, 5*time.Second)
				js, err := jetstream.New(b.dial(t))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				kv, err := js.KeyValue(ctx, c.l.cfg.Bucket)
				if err != nil {
					t.Fatal(err)
				}
				if err := tt.take(ctx, kv); err != nil {
					t.Fatalf("%s the lease: %v", tt.name, err)
				}
				taken := time.Now()
				select {
				case cause := <-c.causes:
					took := time.Since(taken)
					if !errors.Is(cause, ErrLeadershipLost) {
						t.Fatalf("function's ctx cause %v, want ErrLeadershipLost", cause)
					}
					if limit := testTTL/3 + 500*time.Millisecond; took > limit {
						t.Fatalf("function cancelled %s after the loss, want within a renewal interval (%s)", took, limit)
					}
					t.Logf("%s %s: function cancelled %s after the lease was taken", b.name, tt.name, took)
				case <-time.After(3 * testTTL):
					t.Fatal("function's ctx not cancelled after the lease was taken")
				}
				// It keeps campaigning: once the key is free (at once after a
				// delete or purge, after the TTL after an overwrite) it leads
				// again.
				testenv.WaitFor(t, 3*testTTL, "a second run of the leader function after campaigning again", func() bool { return c.runs.Load() >= 2 })
				if !c.l.IsLeader() {
					t.Fatal("running again but IsLeader false")
				}
			})
		})
	}
}

// TestLeaderKeepsLeaseWhileDraining: after ctx ends the lease is renewed
// until the function returns, so nobody else starts during the drain; then
// it is released and another campaigner takes over at once.
func TestLeaderKeepsLeaseWhileDraining(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		bucket := uniqueBucket(t, b.dial(t))
		cfg := LeaderConfig{Bucket: bucket, Name: "relay", ID: "draining", TTL: testTTL}
		drainer := &campaigner{nc: b.dial(t), reg: prometheus.NewRegistry(), causes: make(chan error, 1)}
		drainer.l = newLeader(t, drainer.nc, cfg)
		drained := make(chan struct{})
		drainer.start(t, func(ctx context.Context) error {
			<-ctx.Done()
			// A drain longer than the lease's TTL: the subject is that timer.
			time.Sleep(3 * testTTL / 2)
			close(drained)
			return nil
		})
		cs := []*campaigner{drainer}
		waitLeader(t, cs, nil, 5*time.Second)
		cfg.ID = "waiting"
		waiting := &campaigner{nc: b.dial(t), reg: prometheus.NewRegistry()}
		waiting.l = newLeader(t, waiting.nc, cfg)
		waiting.start(t, func(ctx context.Context) error { <-ctx.Done(); return nil })
		cs = append(cs, waiting)
		drainer.cancel()
		for {
			select {
			case <-drained:
				_, took := waitLeader(t, cs, drainer, testTTL)
				t.Logf("%s: handover %s after the drain ended", b.name, took)
				<-drainer.done
				if drainer.err != nil {
					t.Fatalf("drained leader's Run = %v, want nil", drainer.err)
				}
				return
			case <-time.After(20 * time.Millisecond):
				select {
				case <-drained:
					// The function returned as the timer fired: the lease
					// is being released now, as it should.
					continue
				default:
				}
				if waiting.l.IsLeader() {
					t.Fatal("another campaigner leads while the leader drains")
				}
				if !drainer.l.IsLeader() {
					t.Fatal("draining leader gave up the lease before its function returned")
				}
			}
		}
	})
}

// TestLeaderFunctionReturns: a leader function that returns on its own
// ends Run with its error, and the lease is released.
func TestLeaderFunctionReturns(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	for _, want := range []error{nil, errBoom} {
		t.Run(fmt.Sprint(want), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend) {
				nc := b.dial(t)
				l := newLeader(t, nc, LeaderConfig{Bucket: uniqueBucket(t, nc), Name: "reconciler", TTL: testTTL})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err := l.Run(ctx, func(ctx context.Context) error {
					if !l.IsLeader() {
						t.Error("function runs while IsLeader is false")
					}
					return want
				})
				if !errors.Is(err, want) || (want == nil && err != nil) {
					t.Fatalf("Run = %v, want %v", err, want)
				}
				if l.IsLeader() {
					t.Fatal("IsLeader after Run returned")
				}
				holder, err := l.Holder(ctx)
				if err != nil || holder != "" {
					t.Fatalf("Holder after Run = %q, %v; want released", holder, err)
				}
			})
		})
	}
}

func TestLeaderRunTwice(t *testing.T) {
	e := startEmbedded(t, t.TempDir(), 0)
	nc := connect(t, e)
	l := newLeader(t, nc, LeaderConfig{Name: "relay", TTL: testTTL})
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- l.Run(ctx, func(ctx context.Context) error { close(started); <-ctx.Done(); return nil })
	}()
	<-started
	if err := l.Run(ctx, func(context.Context) error { return nil }); !errors.Is(err, ErrLeaderRunning) {
		t.Fatalf("second Run = %v, want ErrLeaderRunning", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestNewLeaderConcurrent starts several processes on a missing bucket at
// once: all succeed. A different TTL on the same bucket is refused.
func TestNewLeaderConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		nc := b.dial(t)
		bucket := uniqueBucket(t, nc)
		conns := make([]*nats.Conn, 6)
		for i := range conns {
			conns[i] = b.dial(t)
		}
		var wg sync.WaitGroup
		for i, conn := range conns {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				reg := prometheus.NewRegistry()
				if _, err := NewLeader(ctx, conn, LeaderConfig{Bucket: bucket, Name: "relay", TTL: testTTL, Registerer: reg}); err != nil {
					t.Errorf("NewLeader %d: %v", i, err)
				}
				if n := testutil.CollectAndCount(reg, "ordersync_leader"); n != 1 {
					t.Errorf("NewLeader %d: %d ordersync_leader series, want 1", i, n)
				}
			})
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := NewLeader(ctx, nc, LeaderConfig{Bucket: bucket, Name: "reconciler", TTL: 2 * testTTL})
		if err == nil || !strings.Contains(err.Error(), "TTL") {
			t.Fatalf("NewLeader with another TTL on the bucket = %v, want an error naming TTL", err)
		}
	})
}
