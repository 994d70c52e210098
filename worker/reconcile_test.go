package worker_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// getLog notes when each GET left and for which order, in front
// of the real client.
type getLog struct {
	ordersync.Upstream
	mu   sync.Mutex
	gets []loggedGet
}

type loggedGet struct {
	code string
	at   time.Time
}

func (u *getLog) GetOrder(ctx context.Context, code string) (*ordersync.Order, error) {
	u.mu.Lock()
	u.gets = append(u.gets, loggedGet{code, time.Now()})
	u.mu.Unlock()
	return u.Upstream.GetOrder(ctx, code)
}

func (u *getLog) recorded() []loggedGet {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.gets)
}

// TestReconcilerCatchesMissedChanges: every order was paid while its
// webhook was lost. Once their checks are due, one round of due checks
// finds every change, counts it as a missed webhook, and reschedules the
// orders, so the next round at the same time has nothing to do.
func TestReconcilerCatchesMissedChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	var offset time.Duration
	clock := func() time.Time { return time.Now().Add(offset) }
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.Clock = clock })
	ctx := context.Background()
	orders := e.createOrders(t, 6)
	for _, o := range orders {
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
			t.Fatal(err)
		}
		if _, err := e.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
			t.Fatal(err)
		}
	}
	drift := 0
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{
		Schedule: e.db, Syncer: s, Registerer: prometheus.NewRegistry(), Clock: clock,
		OnDrift: func(kind string) {
			if kind == "missed_webhook" {
				drift++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := rec.CheckDue(ctx, time.Now(), 100); err != nil || rep.Candidates != 0 {
		t.Fatalf("checks due right after the orders were fetched: %+v, %v; want none", rep, err)
	}
	offset = ordersync.CheckActiveInterval + time.Second
	later := clock()
	rep, err := rec.CheckDue(ctx, later, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changed) != 6 || drift != 6 {
		t.Errorf("due checks found %d changes and %d missed webhooks, want 6 and 6: %+v", len(rep.Changed), drift, rep)
	}
	for _, o := range orders {
		m, err := e.db.FindOrderByCode(ctx, ordersync.DefaultAccount, o.OrderCode)
		if err != nil {
			t.Fatal(err)
		}
		if m.Order.OrderStatus != ordersync.StatusPaid {
			t.Errorf("order %s is still %s after its check", o.OrderCode, m.Order.OrderStatus)
		}
	}
	if rep, err := rec.CheckDue(ctx, later, 100); err != nil || rep.Candidates != 0 {
		t.Errorf("checks due again at once: %+v, %v; want none: a found change brings the next check near, not now", rep, err)
	}
}

// TestReconcilerStaysWithinBudget: with 40 orders due and a tenth of the
// upstream's answers failing (so fetches retry), the reconciler running
// at a budget of 20 requests per second (a bucket of one) never sends its
// k-th request, retries included, before k twentieths of a second from
// its start.
func TestReconcilerStaysWithinBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	up := &getLog{Upstream: e.client}
	s := e.newSyncer(t, up, nil)
	ctx := context.Background()
	for _, o := range e.createOrders(t, 40) {
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.sim.SetFaults(sim.Faults{ServerErrorRate: 0.1}); err != nil {
		t.Fatal(err)
	}
	const budget = 20
	reg := prometheus.NewRegistry()
	// Before the budget exists, so that no turn of it comes before start.
	start := time.Now()
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{
		Schedule: e.db, Syncer: s, Budget: budget, Registerer: reg, Logger: e.logger,
		// Every order is due.
		Clock: func() time.Time { return time.Now().Add(ordersync.CheckActiveInterval + time.Minute) },
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	const window = 2500 * time.Millisecond
	time.AfterFunc(window, stop)
	if err := rec.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	var gets []time.Time
	for _, g := range up.recorded() {
		if g.at.After(start) {
			gets = append(gets, g.at)
		}
	}
	// A busy machine may stall the reconciler for a second and a half
	// (18 requests in 2 s at a load average of 16); 20 requests still
	// judge the budget.
	if len(gets) < 20 {
		t.Fatalf("the reconciler sent %d requests in %s, too few to judge its budget of %d/s", len(gets), window, budget)
	}
	// A request is noted when it leaves, at or after its turn, and the
	// k-th turn (from 0) comes k budget-ths of a second after start at the
	// earliest. A busy machine delays a request past its turn and may
	// bunch delayed ones together, which a count per window of one second
	// would take for a breach; it cannot make one leave before its turn.
	// The millisecond is the limiter's rounding.
	for k, at := range gets {
		if earliest := time.Duration(k) * time.Second / budget; at.Sub(start) < earliest-time.Millisecond {
			t.Fatalf("request %d left %s after the start, before its turn at %s for a budget of %d/s", k+1, at.Sub(start), earliest, budget)
		}
	}
	checked := counterValue(t, reg, "ordersync_reconcile_checks_total", map[string]string{"outcome": "unchanged"}) +
		counterValue(t, reg, "ordersync_reconcile_checks_total", map[string]string{"outcome": "failed"})
	t.Logf("%d requests in %s for %v checks at a budget of %d/s", len(gets), window, checked, budget)
}

// TestReconcilerGivesWayToWebhookFetches: with the upstream capped at 20
// requests per second and webhook-driven fetches queued for it, the
// reconciler's checks wait until every one of those fetches has left,
// including those queued after the checks were. The first fetches are
// held at the rate limit until every check and every later fetch waits,
// so that no scheduling delay lets them all leave before the later ones
// are queued.
func TestReconcilerGivesWayToWebhookFetches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	up := &getLog{Upstream: e.client}
	s := e.newSyncer(t, up, func(c *worker.SyncerConfig) { c.RequestsPerSecond = 20 })
	ctx := context.Background()
	orders := e.createOrders(t, 35)
	webhookOrders, checkedOrders := orders[:30], orders[30:]
	var wg sync.WaitGroup
	held := make(chan struct{})
	// A nil held is a plain fetch.
	fetch := func(orders []ordersync.PaymentLinkResult, held <-chan struct{}) {
		for _, o := range orders {
			wg.Go(func() {
				var err error
				if held == nil {
					_, _, err = s.Fetch(ctx, ordersync.DefaultAccount, o.OrderCode)
				} else {
					err = s.FetchHeldForTest(ctx, o.OrderCode, held)
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	fetch(webhookOrders[:15], held)
	waiting := func(n int) {
		t.Helper()
		// Every one of them has sent its request or waits at the rate limit.
		for s.WaitingFetchesForTest()+int64(len(up.recorded())) < int64(n) {
			runtime.Gosched()
		}
	}
	waiting(15)
	admitted := make(chan struct{}, len(checkedOrders))
	for _, o := range checkedOrders {
		wg.Go(func() {
			admit := func(context.Context) error { admitted <- struct{}{}; return nil }
			if _, err := s.CheckOrder(ctx, ordersync.DefaultAccount, o.OrderCode, admit); err != nil {
				t.Error(err)
			}
		})
	}
	// Every check has passed its budget and waits for its turn.
	for range checkedOrders {
		<-admitted
	}
	fetch(webhookOrders[15:], nil) // more webhooks, while the checks wait
	waiting(len(webhookOrders))
	close(held)
	wg.Wait()
	gets := up.recorded()
	checked := map[string]bool{}
	for _, o := range checkedOrders {
		checked[o.OrderCode] = true
	}
	for i, g := range gets {
		if checked[g.code] && i < len(webhookOrders) {
			t.Fatalf("check of %s was request %d of %d, before the webhooks' fetches were done", g.code, i+1, len(gets))
		}
	}
	if len(gets) != len(orders) {
		t.Errorf("%d requests, want %d", len(gets), len(orders))
	}
}

// TestReconcilerDefersOrdersTheServiceRefuses: a check the service answers
// with a permanent failure (an order it does not know) comes back after
// the longest interval, while a transient failure is tried again a
// minute later.
func TestReconcilerDefersOrdersTheServiceRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	if err := e.db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "NoSuch1"}); err != nil {
		t.Fatal(err)
	}
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{Schedule: e.db, Syncer: s, Registerer: prometheus.NewRegistry(), Logger: e.logger})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(ordersync.CheckFirstFetch + time.Second)
	rep, err := rec.CheckDue(ctx, due, 10)
	if err != nil || rep.Failed != 1 || !worker.IsPermanent(rep.FirstError) {
		t.Fatalf("check of an unknown order: %+v, %v; want one permanent failure", rep, err)
	}
	for _, after := range []time.Duration{2 * time.Minute, ordersync.CheckMaxInterval - time.Minute} {
		if rep, err := rec.CheckDue(ctx, due.Add(after), 10); err != nil || rep.Candidates != 0 {
			t.Errorf("%s later: %+v, %v; want no check yet", after, rep, err)
		}
	}
	if rep, err := rec.CheckDue(ctx, due.Add(ordersync.CheckMaxInterval+time.Minute), 10); err != nil || rep.Candidates != 1 {
		t.Errorf("after %s: %+v, %v; want the check again", ordersync.CheckMaxInterval, rep, err)
	}
}

// TestReconcilerBacksOffOn429: each 429 the upstream answers halves the
// reconciler's budget, down to an eighth of it, so the checks make room
// for webhook-driven fetches before those feel the limit again.
func TestReconcilerBacksOffOn429(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	// The breaker stays closed, so every check ends in the 429 itself.
	s := e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.Breaker.ConsecutiveFailures = 1 << 20 })
	ctx := context.Background()
	for _, o := range e.createOrders(t, 10) {
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.sim.SetFaults(sim.Faults{RateLimitRate: 1, RetryAfter: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rec, err := worker.NewReconciler(worker.ReconcilerConfig{
		Schedule: e.db, Syncer: s, Registerer: reg, Logger: e.logger,
		Clock: func() time.Time { return time.Now().Add(ordersync.CheckActiveInterval + time.Minute) },
	})
	if err != nil {
		t.Fatal(err)
	}
	budget := func() float64 { return counterValue(t, reg, "ordersync_reconcile_budget_rps", nil) }
	if got := budget(); got != worker.DefaultReconcileBudget {
		t.Fatalf("budget %v before any 429, want %v", got, worker.DefaultReconcileBudget)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec.Run(runCtx) }()
	// The gauge is the signal: wait for it to reach the floor (between two
	// 429s it climbs back a little: within 1%).
	floor := float64(worker.DefaultReconcileBudget) / 8
	deadline := time.After(20 * time.Second)
	for budget() > floor*1.01 {
		select {
		case <-deadline:
			stop()
			t.Fatalf("budget %v after 20s of 429s, want halved down to %v", budget(), floor)
		case <-time.After(5 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := budget(); got < floor || got > floor*1.01 {
		t.Errorf("budget %v after many 429s, want the floor %v", got, floor)
	}
}
