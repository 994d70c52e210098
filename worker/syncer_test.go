package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// holdFirstUpstream is the real client, except that the first GetOrder of
// one code is answered only after release is closed: the answer was fetched
// before the wait, so it is the older document.
type holdFirstUpstream struct {
	ordersync.Upstream
	code     string
	calls    atomic.Int32
	answered chan struct{}
	release  chan struct{}
}

func (h *holdFirstUpstream) GetOrder(ctx context.Context, code string) (*ordersync.Order, error) {
	o, err := h.Upstream.GetOrder(ctx, code)
	if code == h.code && h.calls.Add(1) == 1 {
		close(h.answered)
		<-h.release
	}
	return o, err
}

// TestSyncerLaterFetchWins: a fetch that started earlier but finishes later
// does not overwrite the mirror.
func TestSyncerLaterFetchWins(t *testing.T) {
	e := newFakeEnv(t, sim.Faults{})
	code := e.createOrders(t, 1)[0].OrderCode
	up := &holdFirstUpstream{Upstream: e.client, code: code, answered: make(chan struct{}), release: make(chan struct{})}
	s := e.newSyncer(t, up, nil)
	ctx := context.Background()

	older := make(chan ordersync.ApplyResult, 1)
	go func() {
		r, err := s.SyncOrder(ctx, ordersync.DefaultAccount, code, ordersync.CauseWebhook)
		if err != nil {
			t.Errorf("older SyncOrder: %v", err)
		}
		older <- r
	}()
	<-up.answered // the older fetch holds a PENDING document
	if _, err := e.sim.Pay(code, ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatalf("Pay: %v", err)
	}
	newer, err := s.SyncOrder(ctx, ordersync.DefaultAccount, code, ordersync.CauseWebhook)
	if err != nil {
		t.Fatalf("newer SyncOrder: %v", err)
	}
	if !newer.Applied || newer.Status != ordersync.StatusPaid {
		t.Fatalf("newer fetch: %+v, want applied PAID", newer)
	}
	close(up.release)
	if r := <-older; r.Applied {
		t.Errorf("older fetch finishing last was applied: %+v", r)
	}
	got, err := e.mirror.FindOrderByCode(ctx, ordersync.DefaultAccount, code)
	if err != nil {
		t.Fatalf("FindOrderByCode: %v", err)
	}
	if got.Order.OrderStatus != ordersync.StatusPaid {
		t.Errorf("mirror status %s, want PAID", got.Order.OrderStatus)
	}
	if v := counterValue(t, e.reg, "ordersync_mirror_upserts_total", map[string]string{"result": "stale"}); v != 1 {
		t.Errorf("stale upserts = %v, want 1", v)
	}
}

// TestSyncerPermanentErrors: an unknown order is permanent, not an outage,
// and is not retried.
func TestSyncerPermanentErrors(t *testing.T) {
	e := newFakeEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	_, err := s.SyncOrder(context.Background(), ordersync.DefaultAccount, "Nope999", ordersync.CauseTrack)
	switch {
	case err == nil:
		t.Fatal("SyncOrder of an unknown code succeeded")
	case !worker.IsPermanent(err) || worker.IsOutage(err):
		t.Errorf("IsPermanent=%v IsOutage=%v for %v, want permanent", worker.IsPermanent(err), worker.IsOutage(err), err)
	case !errors.Is(err, ordersync.ErrNotFound):
		t.Errorf("error %v does not wrap ErrNotFound", err)
	}
	if gets := e.sim.Stats().Gets; gets != 1 {
		t.Errorf("%d GETs for a 404, want 1 (no retry)", gets)
	}
	if v := counterValue(t, e.reg, "ordersync_fetch_requests_total", map[string]string{"outcome": "not_found"}); v != 1 {
		t.Errorf("not_found requests = %v, want 1", v)
	}
}

// recordingUpstream is the real client, noting when each GetOrder started
// and how it ended.
type recordingUpstream struct {
	ordersync.Upstream
	mu    sync.Mutex
	calls []call
	// after is called after each answer, outside the lock.
	after func(kind ordersync.UpstreamErrorKind)
}

type call struct {
	start time.Time
	end   time.Time
	kind  ordersync.UpstreamErrorKind
}

func (r *recordingUpstream) GetOrder(ctx context.Context, code string) (*ordersync.Order, error) {
	start := time.Now()
	o, err := r.Upstream.GetOrder(ctx, code)
	kind := ordersync.UpstreamErrorKindOf(err)
	r.mu.Lock()
	r.calls = append(r.calls, call{start: start, end: time.Now(), kind: kind})
	r.mu.Unlock()
	if r.after != nil {
		r.after(kind)
	}
	return o, err
}

func (r *recordingUpstream) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// TestSyncerRetryAfterHoldsEveryCaller: a 429 with Retry-After pauses all
// callers, not only the one that got it: no request leaves before it.
func TestSyncerRetryAfterHoldsEveryCaller(t *testing.T) {
	t.Parallel()
	const retryAfter = time.Second
	e := newFakeEnv(t, sim.Faults{RateLimitRate: 1, RetryAfter: retryAfter})
	orders := e.createOrders(t, 4)
	first429 := make(chan struct{})
	var once sync.Once
	up := &recordingUpstream{Upstream: e.client}
	up.after = func(kind ordersync.UpstreamErrorKind) {
		if kind == ordersync.UpstreamRateLimited {
			once.Do(func() {
				if err := e.sim.SetFaults(sim.Faults{}); err != nil {
					t.Errorf("SetFaults: %v", err)
				}
				close(first429)
			})
		}
	}
	s := e.newSyncer(t, up, func(c *worker.SyncerConfig) { c.Retry.MaxElapsed = 5 * time.Second })

	var wg sync.WaitGroup
	fetch := func(code string) {
		defer wg.Done()
		if _, _, err := s.Fetch(context.Background(), ordersync.DefaultAccount, code); err != nil {
			t.Errorf("Fetch %s: %v", code, err)
		}
	}
	wg.Add(1)
	go fetch(orders[0].OrderCode)
	<-first429
	// Once the syncer has counted the 429, the gate is set.
	waitFor(t, 5*time.Second, "the 429 counted", func() bool {
		return counterValue(t, e.reg, "ordersync_fetch_requests_total", map[string]string{"outcome": "rate_limited"}) == 1
	})
	for _, o := range orders[1:] {
		wg.Add(1)
		go fetch(o.OrderCode)
	}
	wg.Wait()

	calls := up.snapshot()
	var limitedAt time.Time
	for _, c := range calls {
		if c.kind == ordersync.UpstreamRateLimited {
			limitedAt = c.end
			break
		}
	}
	after := 0
	for _, c := range calls {
		if c.start.After(limitedAt) {
			after++
			if wait := c.start.Sub(limitedAt); wait < retryAfter-10*time.Millisecond {
				t.Errorf("a request left %v after the 429, before its Retry-After of %v", wait, retryAfter)
			}
		}
	}
	if after != len(orders) {
		t.Errorf("%d requests after the 429, want %d (one per order)", after, len(orders))
	}
	if v := counterValue(t, e.reg, "ordersync_fetch_requests_total", map[string]string{"outcome": "rate_limited"}); v != 1 {
		t.Errorf("rate_limited requests = %v, want 1", v)
	}
}

// TestSyncerBreakerOpensOnServerErrors: a run of 5xx opens the breaker;
// while open, fetches fail fast as an outage without a request.
func TestSyncerBreakerOpensOnServerErrors(t *testing.T) {
	e := newFakeEnv(t, sim.Faults{ServerErrorRate: 1})
	code := e.createOrders(t, 1)[0].OrderCode
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Breaker = worker.BreakerConfig{ConsecutiveFailures: 3, OpenFor: time.Minute}
		c.Retry.MaxElapsed = time.Second
	})
	_, _, err := s.Fetch(context.Background(), ordersync.DefaultAccount, code)
	if !worker.IsOutage(err) || !errors.Is(err, worker.ErrBreakerOpen) {
		t.Fatalf("Fetch during 5xx: %v, want an outage with the breaker open", err)
	}
	if worker.IsPermanent(err) {
		t.Errorf("breaker open reported permanent")
	}
	if gets := e.sim.Stats().Gets; gets != 3 {
		t.Errorf("%d requests sent, want 3 (the breaker opens after 3 failures)", gets)
	}
	if worker.OutageWait(err) <= 0 {
		t.Errorf("OutageWait = %v, want the rest of the open period", worker.OutageWait(err))
	}
	_, _, err = s.Fetch(context.Background(), ordersync.DefaultAccount, code)
	if !errors.Is(err, worker.ErrBreakerOpen) {
		t.Errorf("second Fetch: %v, want breaker open", err)
	}
	if gets := e.sim.Stats().Gets; gets != 3 {
		t.Errorf("%d requests after the breaker opened, want none", gets-3)
	}
	if v := counterValue(t, e.reg, "ordersync_upstream_breaker_open", nil); v != 1 {
		t.Errorf("breaker gauge = %v, want 1", v)
	}
}

// TestSyncerBreakerOpensCounted: ordersync_upstream_breaker_opens_total
// counts the breaker opening after fetches flowed, not each failed probe of
// an outage, so a flapping upstream shows as opens in a row.
func TestSyncerBreakerOpensCounted(t *testing.T) {
	const openFor = 20 * time.Millisecond
	e := newFakeEnv(t, sim.Faults{ServerErrorRate: 1})
	code := e.createOrders(t, 1)[0].OrderCode
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Breaker = worker.BreakerConfig{ConsecutiveFailures: 2, OpenFor: openFor}
		c.Retry = worker.RetryConfig{Initial: time.Millisecond, Max: time.Millisecond, MaxElapsed: time.Second}
	})
	opens := func() float64 { return counterValue(t, e.reg, "ordersync_upstream_breaker_opens_total", nil) }
	// fetchUntil fetches until the breaker lets a request reach the
	// simulator and the fetch ends as want says.
	fetchUntil := func(what string, want func(error) bool) {
		t.Helper()
		waitFor(t, 5*time.Second, what, func() bool {
			gets := e.sim.Stats().Gets
			_, _, err := s.Fetch(context.Background(), ordersync.DefaultAccount, code)
			return e.sim.Stats().Gets > gets && want(err)
		})
	}
	outage := func(err error) bool { return errors.Is(err, worker.ErrBreakerOpen) }

	fetchUntil("the breaker opens", outage)
	if v := opens(); v != 1 {
		t.Fatalf("opens after the first outage = %v, want 1", v)
	}
	// A probe that fails again reopens a breaker that never closed.
	fetchUntil("a failed probe", outage)
	if v := opens(); v != 1 {
		t.Errorf("opens after a failed probe = %v, want still 1", v)
	}
	if err := e.sim.SetFaults(sim.Faults{}); err != nil {
		t.Fatal(err)
	}
	fetchUntil("the breaker closes", func(err error) bool { return err == nil })
	if err := e.sim.SetFaults(sim.Faults{ServerErrorRate: 1}); err != nil {
		t.Fatal(err)
	}
	fetchUntil("the breaker opens again", outage)
	if v := opens(); v != 2 {
		t.Errorf("opens after the upstream flapped = %v, want 2", v)
	}
}

// TestSyncerRetriesExhausted: transient failures past MaxElapsed end as an
// outage, with retries counted.
func TestSyncerRetriesExhausted(t *testing.T) {
	e := newFakeEnv(t, sim.Faults{ServerErrorRate: 1})
	code := e.createOrders(t, 1)[0].OrderCode
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) {
		c.Breaker.ConsecutiveFailures = 1000
		c.Retry = worker.RetryConfig{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond, MaxElapsed: 100 * time.Millisecond}
	})
	_, _, err := s.Fetch(context.Background(), ordersync.DefaultAccount, code)
	if !errors.Is(err, worker.ErrRetriesExhausted) || ordersync.UpstreamErrorKindOf(err) != ordersync.UpstreamServer {
		t.Fatalf("Fetch: %v, want retries exhausted after server errors", err)
	}
	gets := e.sim.Stats().Gets
	if gets < 3 {
		t.Errorf("%d requests, want several retries", gets)
	}
	if v := counterValue(t, e.reg, "ordersync_fetch_retries_total", nil); v != float64(gets-1) {
		t.Errorf("retries = %v, want %d", v, gets-1)
	}
}

// switchableUpstream is a real client whose key can be fixed at run time.
type switchableUpstream struct {
	cur atomic.Pointer[paymentlink.Client]
}

func (s *switchableUpstream) CreatePaymentLink(ctx context.Context, p ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	return s.cur.Load().CreatePaymentLink(ctx, p)
}

func (s *switchableUpstream) GetOrder(ctx context.Context, code string) (*ordersync.Order, error) {
	return s.cur.Load().GetOrder(ctx, code)
}

// TestPoolCredentialsPause: a rejected key pauses fetching (one probe per
// interval, one ERROR log, the gauge up, no dead letters); fixing the key
// resumes it and everything syncs.
func TestPoolCredentialsPause(t *testing.T) {
	t.Parallel()
	const probeEvery = 100 * time.Millisecond
	e := newPoolEnv(t, sim.Faults{})
	orders := e.createOrders(t, 5)
	up := &switchableUpstream{}
	up.cur.Store(newClient(t, e.simURL, "sk_wrong"))
	var logs testenv.Buffer
	s := e.newSyncer(t, up, func(c *worker.SyncerConfig) {
		c.CredentialsProbeInterval = probeEvery
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	var codes []string
	for _, o := range orders {
		codes = append(codes, o.OrderCode)
		e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
	}
	e.startPool(t, s, func(c *worker.PoolConfig) { c.MaxAttempts = 2 })

	waitFor(t, 5*time.Second, "credentials gauge", func() bool {
		return counterValue(t, e.reg, "ordersync_upstream_credentials_rejected", nil) == 1
	})
	pausedAt := time.Now()
	// The pause's own probe timer is the subject, against the real client
	// and simulator: a window of five probe intervals, bounded below by
	// the probes it allows.
	time.Sleep(5 * probeEvery)
	rejected := e.sim.Stats().Unauthorized
	// Up to one request per order may have been in flight when the first
	// 401 came back; after that, one probe per interval.
	if limit := int64(len(orders)) + int64(time.Since(pausedAt)/probeEvery) + 1; rejected > limit {
		t.Errorf("%d requests refused while paused, want at most %d", rejected, limit)
	}
	if n := len(e.deadLetters(t, "")); n != 0 {
		t.Errorf("%d dead letters during a credentials pause, want none", n)
	}
	if !s.CredentialsPaused() {
		t.Error("CredentialsPaused() = false while the key is rejected")
	}

	up.cur.Store(newClient(t, e.simURL, simKey))
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, codes)
	if v := counterValue(t, e.reg, "ordersync_upstream_credentials_rejected", nil); v != 0 {
		t.Errorf("credentials gauge = %v after the key was fixed, want 0", v)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d ERROR logs, want exactly 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "sk_wrong") || strings.Contains(logs.String(), simKey) {
		t.Error("a secret key was logged")
	}
}
