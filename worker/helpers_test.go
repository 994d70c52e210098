package worker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/store/storetest"
	"github.com/ordersync/ordersync/worker"
)

const simKey = "sk_test_worker"

// env is the real pipeline around a pool: the simulator behind a real HTTP
// listener and client, a SQLite mirror in a temp dir, and an embedded
// JetStream queue. newFakeEnv's has the simulator and an in-memory mirror
// only, for the tests of a stage that are not about the database or the
// queue.
type env struct {
	sim    *sim.Server
	simURL string
	client *paymentlink.Client
	// mirror is db, or the fake mirror when db and the queue are nil.
	mirror   storetest.Store
	db       *store.DB
	nc       *nats.Conn
	q        *queue.Queue
	queueCfg queue.Config
	// fq is the queue in memory (fake.Queue) when q is nil.
	fq     *fake.Queue
	reg    *prometheus.Registry
	logger *slog.Logger
	msgSeq atomic.Int64
}

// DB is the mirror a test wraps to watch or fail some of its calls:
// SQLite's or the fake's.
type DB = storetest.Store

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// newFakeEnv is the simulator behind a real HTTP listener and client, and
// the mirror in memory (fake.Store): no database, no queue.
func newFakeEnv(t testing.TB, faults sim.Faults) *env {
	t.Helper()
	e := &env{reg: prometheus.NewRegistry(), mirror: fake.NewStore()}
	e.logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var err error
	if e.sim, err = sim.New(sim.Config{SecretKey: simKey, Faults: faults, Seed: 42}); err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	t.Cleanup(func() { e.sim.Close() })
	if e.simURL, err = e.sim.Listen("127.0.0.1:0"); err != nil {
		t.Fatalf("sim Listen: %v", err)
	}
	e.client = newClient(t, e.simURL, simKey)
	return e
}

// newPoolEnv is newFakeEnv with the events queue in memory (fake.Queue),
// for the pool's tests whose subject is its own logic, not JetStream's
// delivery or SQLite.
func newPoolEnv(t testing.TB, faults sim.Faults) *env {
	t.Helper()
	e := newFakeEnv(t, faults)
	e.fq = fake.NewQueue()
	return e
}

func newEnv(t testing.TB, faults sim.Faults) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := newFakeEnv(t, faults)
	var err error
	if e.db, err = store.Open(ctx, store.Config{URL: testdb.SQLitePath(t)}); err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { e.db.Close() })
	e.mirror = e.db

	emb, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(emb.Shutdown)
	if e.nc, err = emb.Connect(t.Name()); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(e.nc.Close)
	e.queueCfg = uniqueQueueConfig()
	if e.q, err = queue.New(ctx, e.nc, e.queueCfg); err != nil {
		t.Fatalf("queue.New: %v", err)
	}
	return e
}

func newClient(t testing.TB, baseURL, key string) *paymentlink.Client {
	t.Helper()
	c, err := paymentlink.New(paymentlink.Config{BaseURL: baseURL, SecretKey: key, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("paymentlink.New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// uniqueQueueConfig names streams and consumer after a random token, with a
// short ack wait so a lost settle shows up within a test.
func uniqueQueueConfig() queue.Config {
	b := make([]byte, 5)
	rand.Read(b)
	id := hex.EncodeToString(b)
	return queue.Config{
		SubjectPrefix: "t" + id,
		EventsStream:  "T" + id + "_EVENTS",
		OrdersStream:  "T" + id + "_ORDERS",
		Consumer:      "worker",
		AckWait:       10 * time.Second,
	}
}

// fastSyncer is a Syncer with test-sized waits.
func (e *env) newSyncer(t testing.TB, up ordersync.Upstream, edit func(*worker.SyncerConfig)) *worker.Syncer {
	t.Helper()
	if up == nil {
		up = e.client
	}
	cfg := worker.SyncerConfig{
		Upstream: up, Mirror: e.mirror, Registerer: e.reg, Logger: e.logger,
		Retry:   worker.RetryConfig{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, MaxElapsed: 200 * time.Millisecond},
		Breaker: worker.BreakerConfig{ConsecutiveFailures: 5, OpenFor: 200 * time.Millisecond},
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := worker.NewSyncer(cfg)
	if err != nil {
		t.Fatalf("NewSyncer: %v", err)
	}
	return s
}

// startPool runs a pool until the test ends or stop is called; stop
// returns Run's error after the drain.
func (e *env) startPool(t testing.TB, s *worker.Syncer, edit func(*worker.PoolConfig)) (stop func() error) {
	t.Helper()
	cfg := worker.PoolConfig{
		Source: e.source(), Syncer: s, Mirror: e.mirror, Registerer: e.reg, Logger: e.logger,
		FetchConcurrency: 16, PullWait: 5 * time.Millisecond, RetryDelay: 20 * time.Millisecond,
		UnresolvedRetryDelays: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond},
		PendingInterval:       50 * time.Millisecond, ExtendInterval: 500 * time.Millisecond,
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := worker.NewPool(cfg)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = fmt.Errorf("Run did not return 30s after cancel")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("pool Run: %v", err)
		}
	})
	return stop
}

// createOrders creates n orders in the simulator and records their keys in
// the mirror, as ordersync does for links it creates, so webhooks carrying
// only orderId resolve.
func (e *env) createOrders(t testing.TB, n int) []ordersync.PaymentLinkResult {
	t.Helper()
	ctx := context.Background()
	out := make([]ordersync.PaymentLinkResult, n)
	for i := range n {
		amount := ordersync.MustAmount(fmt.Sprintf("%d.50", 1+i%40))
		res, err := e.sim.CreatePaymentLink(ordersync.PaymentLinkParams{
			Amount: &amount, OrderReference: fmt.Sprintf("ref-%s-%d", t.Name(), i),
		})
		if err != nil {
			t.Fatalf("sim CreatePaymentLink: %v", err)
		}
		if err := e.mirror.RecordOrderRef(ctx, ordersync.OrderRef{
			Account: ordersync.DefaultAccount, Code: res.OrderCode, ID: res.OrderID,
			Reference: fmt.Sprintf("ref-%s-%d", t.Name(), i),
		}); err != nil {
			t.Fatalf("RecordOrderRef: %v", err)
		}
		out[i] = res
	}
	return out
}

// webhook is a queued webhook in the shape real deployments send: orderId as
// a string, no orderCode.
func (e *env) webhook(id ordersync.ID, typ ordersync.EventType) *ordersync.InboundEvent {
	body := fmt.Sprintf(`{"orderId":%q,"orderReference":null,"orderType":"FASTLINK_CHARGE","description":"x","metadata":null,"level":"Info","type":%q}`, id, typ)
	return e.event([]byte(body))
}

func (e *env) event(body []byte) *ordersync.InboundEvent {
	return &ordersync.InboundEvent{
		MsgID:      fmt.Sprintf("msg-%d", e.msgSeq.Add(1)),
		Account:    ordersync.DefaultAccount,
		Body:       body,
		ReceivedAt: time.Now(),
		Signature:  ordersync.SignatureValid,
		Cause:      ordersync.CauseWebhook,
	}
}

// source is the events the pool takes: the fake queue's, else JetStream's.
func (e *env) source() ordersync.EventSource {
	if e.fq != nil {
		return e.fq
	}
	return e.q.Events()
}

func (e *env) publish(t testing.TB, evs ...*ordersync.InboundEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pub ordersync.EventPublisher = e.q
	if e.fq != nil {
		pub = e.fq
	}
	for _, ev := range evs {
		if _, err := pub.PublishEvent(ctx, ev); err != nil {
			t.Fatalf("PublishEvent: %v", err)
		}
	}
}

// consumerState is what the durable consumer still holds: events never
// delivered, and delivered but not settled. settled reports that every
// event in the stream was acknowledged or terminated (the consumer's pending
// count alone lags a publish for a moment).
func (e *env) consumerState(t testing.TB) (pending, ackPending int, settled bool) {
	t.Helper()
	if e.fq != nil {
		n, _ := e.fq.Pending(context.Background())
		unsettled := e.fq.Unsettled()
		return int(n), unsettled - int(n), unsettled == 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	st, err := js.Stream(ctx, e.queueCfg.EventsStream)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	sinfo, err := st.Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	c, err := st.Consumer(ctx, e.queueCfg.Consumer)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("consumer info: %v", err)
	}
	settled = info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream >= sinfo.State.LastSeq
	return int(info.NumPending), info.NumAckPending, settled
}

// waitDrained waits until the consumer holds nothing: every event delivered
// and settled.
func (e *env) waitDrained(t testing.TB, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "queue drained", func() bool {
		_, _, settled := e.consumerState(t)
		return settled
	})
}

// assertMirrorMatchesSim compares every mirrored order with the simulator's
// truth.
func (e *env) assertMirrorMatchesSim(t testing.TB, codes []string) {
	t.Helper()
	ctx := context.Background()
	for _, code := range codes {
		want, ok := e.sim.Order(code)
		if !ok {
			t.Fatalf("sim has no order %s", code)
		}
		got, err := e.mirror.FindOrderByCode(ctx, ordersync.DefaultAccount, code)
		if err != nil {
			t.Errorf("mirror order %s: %v", code, err)
			continue
		}
		if diffs := ordersync.DiffOrders(&want, &got.Order); len(diffs) > 0 {
			t.Errorf("mirror order %s differs from the simulator:\n%v", code, diffs)
		}
	}
}

func (e *env) deadLetters(t testing.TB, reason ordersync.DeadLetterReason) []*ordersync.DeadLetter {
	t.Helper()
	dls, err := e.mirror.ListDeadLetters(context.Background(), ordersync.DeadLetterFilter{Reason: reason, IncludeReplayed: true, Limit: 1000})
	if err != nil {
		t.Fatalf("ListDeadLetters: %v", err)
	}
	return dls
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, what, cond)
}

func counterValue(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	return testenv.MetricSum(t, reg, name, labels)
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

// histogramTopBucket returns the largest finite upper bound of the
// histogram name in reg.
func histogramTopBucket(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	top := math.Inf(-1)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				if u := b.GetUpperBound(); !math.IsInf(u, 1) && u > top {
					top = u
				}
			}
		}
	}
	return top
}
