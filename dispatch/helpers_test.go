package dispatch_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/store"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// received is one request an endpoint got.
type received struct {
	at      time.Time
	id      string
	typ     string
	order   string
	status  string
	sigs    int
	verify  error
	ctype   string
	headers http.Header
	body    []byte
}

// endpointServer is a real HTTP endpoint on loopback that verifies what it
// receives with secret and answers with answer(n) for its nth request.
type endpointServer struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, r received, w http.ResponseWriter) int
}

func newEndpointServer(t *testing.T, secret string, answer func(n int, r received, w http.ResponseWriter) int) *endpointServer {
	t.Helper()
	s := &endpointServer{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{at: time.Now(), id: r.Header.Get(delivery.HeaderID), ctype: r.Header.Get("Content-Type"),
			sigs: len(strings.Fields(r.Header.Get(delivery.HeaderSignature))), headers: r.Header.Clone(), body: body}
		rec.verify = delivery.Verify(secret, r.Header, body, 0)
		var ev struct {
			Type string `json:"type"`
			Data struct {
				OrderCode   string `json:"orderCode"`
				OrderStatus string `json:"orderStatus"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		rec.typ, rec.order, rec.status = ev.Type, ev.Data.OrderCode, ev.Data.OrderStatus
		s.mu.Lock()
		n := len(s.got)
		s.got = append(s.got, rec)
		s.mu.Unlock()
		code := http.StatusNoContent
		if s.answer != nil {
			code = s.answer(n, rec, w)
		}
		if code != 0 { // 0: the answer was written
			w.WriteHeader(code)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *endpointServer) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// dispatchEnv is a dispatcher over a real SQLite store and embedded NATS.
type dispatchEnv struct {
	*env
	d      *dispatch.Dispatcher
	cancel context.CancelFunc
	done   chan error
	// listed counts the dispatcher's reads of the endpoints, which begin
	// each of its syncs, one after another.
	listed *countingEndpoints
}

// countingEndpoints is the store's endpoints, counting ListEndpoints calls.
type countingEndpoints struct {
	ordersync.Endpoints
	calls atomic.Int64
}

func (c *countingEndpoints) ListEndpoints(ctx context.Context) ([]*ordersync.Endpoint, error) {
	c.calls.Add(1)
	return c.Endpoints.ListEndpoints(ctx)
}

// synced returns once the dispatcher has acted on the endpoints as they are
// now: a read begun after this call saw them, and the read after it begins
// only when that sync is done.
func (e *dispatchEnv) synced(t testing.TB) {
	t.Helper()
	until := e.listed.calls.Load() + 2
	testenv.WaitFor(t, 10*time.Second, "the dispatcher to sync the endpoints", func() bool {
		e.d.Notify()
		return e.listed.calls.Load() >= until
	})
}

// shortAckWait is the endpoint consumers' ack wait in the tests that wait
// it out: the shortest the dispatcher accepts.
const shortAckWait = 3 * time.Second

// newDispatchEnv starts a dispatcher; edits change its configuration
// (the test-sized waits) before it starts.
func newDispatchEnv(t testing.TB, edits ...func(*dispatch.Config)) *dispatchEnv {
	t.Helper()
	e := &dispatchEnv{env: newEnv(t)}
	e.listed = &countingEndpoints{Endpoints: e.db}
	cfg := dispatch.Config{
		Endpoints: e.listed, DeadLetters: e.db, Log: e.db, Stream: e.q, Registerer: e.reg, Logger: e.logger,
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	var err error
	e.d, err = dispatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- e.d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-e.done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return e
}

// addEndpoint creates an endpoint and waits until its consumer exists, so
// that events published from then on reach it.
func (e *dispatchEnv) addEndpoint(t testing.TB, url string, events ...ordersync.HookEvent) *ordersync.Endpoint {
	t.Helper()
	if len(events) == 0 {
		events = ordersync.HookEvents
	}
	ep, err := e.db.CreateEndpoint(context.Background(), ordersync.EndpointParams{URL: url, Events: events, Secret: hookSecret})
	if err != nil {
		t.Fatal(err)
	}
	e.d.Notify()
	e.waitConsumer(t, ep.ID)
	return ep
}

func (e *dispatchEnv) waitConsumer(t testing.TB, id string) {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the endpoint's consumer", func() bool {
		_, err := js.Consumer(context.Background(), e.queueCfg.OrdersStream, e.queueCfg.Consumer+"-endpoint-"+id)
		return err == nil
	})
}

// orderMsg is the outbox message the mirror queues for an order's status
// change (paid=false) or its PAID trigger.
func orderMsg(code string, status ordersync.Status, transition int, paid bool) ordersync.OutboxMessage {
	payload := fmt.Sprintf(`{"orderCode":%q,"orderId":1,"orderStatus":%q,"account":"default","sync":{"fetchSeq":%d}}`, code, status, transition)
	m := ordersync.OutboxMessage{Account: "default", OrderCode: code, Payload: []byte(payload),
		Subject: ordersync.SubjectStatusPrefix + string(status), MsgID: fmt.Sprintf("default:%s:status:%s:%d", code, status, transition)}
	if paid {
		m.Subject, m.MsgID = ordersync.SubjectPaid, "default:"+code+":paid"
	}
	return m
}

func (e *dispatchEnv) publishOrders(t testing.TB, msgs ...ordersync.OutboxMessage) {
	t.Helper()
	if _, err := e.q.PublishMessages(context.Background(), msgs); err != nil {
		t.Fatalf("PublishMessages: %v", err)
	}
}

// deliveries waits until the delivery log holds n rows of an order, and
// returns them, newest first.
func (e *dispatchEnv) deliveries(t testing.TB, code string, n int) []ordersync.DeliveryRecord {
	t.Helper()
	var recs []ordersync.DeliveryRecord
	testenv.WaitFor(t, 10*time.Second, fmt.Sprintf("%d delivery log rows of %s", n, code), func() bool {
		var err error
		recs, err = e.db.ListDeliveries(context.Background(), ordersync.DeliveryFilter{Account: "default", OrderCode: code})
		return err == nil && len(recs) == n
	})
	return recs
}

// env is what a dispatcher runs over: a SQLite store in a temp dir (the
// endpoints, the delivery log and its dead letters) and an embedded
// JetStream (the orders stream the endpoints' consumers read).
type env struct {
	db       *store.DB
	nc       *nats.Conn
	q        *queue.Queue
	queueCfg queue.Config
	reg      *prometheus.Registry
	logger   *slog.Logger
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := &env{reg: prometheus.NewRegistry()}
	e.logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var err error
	if e.db, err = store.Open(ctx, store.Config{URL: testdb.SQLitePath(t)}); err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { e.db.Close() })
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

// uniqueQueueConfig names streams and consumer after a random token.
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

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
