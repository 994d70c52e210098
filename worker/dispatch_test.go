package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
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
	d      *worker.Dispatcher
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
	waitFor(t, 10*time.Second, "the dispatcher to sync the endpoints", func() bool {
		e.d.Notify()
		return e.listed.calls.Load() >= until
	})
}

// shortAckWait is the endpoint consumers' ack wait in the tests that wait
// it out: the shortest the dispatcher accepts.
const shortAckWait = 3 * time.Second

// newDispatchEnv starts a dispatcher; edits change its configuration
// (the test-sized waits) before it starts.
func newDispatchEnv(t testing.TB, edits ...func(*worker.DispatcherConfig)) *dispatchEnv {
	t.Helper()
	e := &dispatchEnv{env: newEnv(t, sim.Faults{})}
	e.listed = &countingEndpoints{Endpoints: e.db}
	cfg := worker.DispatcherConfig{
		Endpoints: e.listed, DeadLetters: e.db, Log: e.db, Stream: e.q, Registerer: e.reg, Logger: e.logger,
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	var err error
	e.d, err = worker.NewDispatcher(cfg)
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
	waitFor(t, 10*time.Second, "the endpoint's consumer", func() bool {
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
	waitFor(t, 10*time.Second, fmt.Sprintf("%d delivery log rows of %s", n, code), func() bool {
		var err error
		recs, err = e.db.ListDeliveries(context.Background(), ordersync.DeliveryFilter{Account: "default", OrderCode: code})
		return err == nil && len(recs) == n
	})
	return recs
}

func TestDispatchDeliversSignedEvents(t *testing.T) {
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	paidOnly := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	po := e.addEndpoint(t, paidOnly.URL, ordersync.HookOrderPaid)
	paidChange, paid := orderMsg("A1", ordersync.StatusPaid, 2, false), orderMsg("A1", ordersync.StatusPaid, 2, true)
	paidChange.FromStatus, paid.FromStatus = ordersync.StatusPending, ordersync.StatusPending
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPending, 1, false), paidChange, paid)
	waitFor(t, 10*time.Second, "three deliveries", func() bool { return len(srv.requests()) == 3 && len(paidOnly.requests()) == 1 })
	got := srv.requests()
	wantTypes := []string{"order.status_changed", "order.status_changed", "order.paid"}
	wantIDs := []string{"default:A1:status:PENDING:1", "default:A1:status:PAID:2", "default:A1:paid"}
	for i, r := range got {
		if r.verify != nil || r.sigs != 1 || r.ctype != "application/json" {
			t.Errorf("request %d: verify %v, %d signatures, Content-Type %q", i, r.verify, r.sigs, r.ctype)
		}
		if r.typ != wantTypes[i] || r.order != "A1" || r.id != delivery.WebhookID(ep.ID, wantIDs[i]) {
			t.Errorf("request %d: type %s order %s id %s; want %s A1 %s", i, r.typ, r.order, r.id, wantTypes[i], delivery.WebhookID(ep.ID, wantIDs[i]))
		}
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(got[2].body, &body); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`{"from":null,"to":"PENDING"}`, `{"from":"PENDING","to":"PAID"}`, `{"from":"PENDING","to":"PAID"}`} {
		var b struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(got[i].body, &b)
		if string(b.Data["statusChange"]) != want || string(b.Data["account"]) != `"default"` {
			t.Errorf("request %d: statusChange %s, want %s", i, b.Data["statusChange"], want)
		}
	}
	if _, err := time.Parse(time.RFC3339, strings.Trim(string(body["timestamp"]), `"`)); err != nil || len(body) != 3 {
		t.Errorf("body %s: want type, RFC 3339 timestamp and data", got[2].body)
	}
	if r := paidOnly.requests()[0]; r.typ != "order.paid" || r.id != delivery.WebhookID(po.ID, "default:A1:paid") || r.id == got[2].id {
		t.Errorf("paid-only endpoint got %s %s", r.typ, r.id)
	}
	if n := counterValue(t, e.reg, "ordersync_delivery_events_total", map[string]string{"endpoint": ep.ID, "outcome": "delivered"}); n != 3 {
		t.Errorf("delivered events metric = %v, want 3", n)
	}
	// The delivery log: one row per event and endpoint, as each ended.
	recs := e.deliveries(t, "A1", 4)
	byID := map[string]ordersync.DeliveryRecord{}
	for _, r := range recs {
		byID[r.WebhookID] = r
	}
	for i, r := range got {
		d, ok := byID[r.id]
		if !ok || d.EndpointID != ep.ID || string(d.Event) != wantTypes[i] || d.Outcome != ordersync.DeliveryDelivered ||
			d.Attempts != 1 || d.Status != http.StatusNoContent || d.OrderStatus != ordersync.Status(r.status) || d.At.Before(r.at.Add(-time.Second)) {
			t.Errorf("delivery log row of request %d (%s): %+v", i, r.id, d)
		}
	}
	if d, ok := byID[paidOnly.requests()[0].id]; !ok || d.EndpointID != po.ID || d.Event != ordersync.HookOrderPaid {
		t.Errorf("delivery log row of the paid-only endpoint: %+v", d)
	}
}

// An endpoint that fails the first attempt of an order's PAID still gets
// PAID before that order's FINALIZED, with one webhook-id across attempts,
// while another order's events are not held up.
func TestDispatchRetryKeepsOrderAndWebhookID(t *testing.T) {
	e := newDispatchEnv(t)
	var failed sync.Once
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		code := http.StatusOK
		if r.order == "A1" && r.typ == "order.paid" {
			failed.Do(func() { code = http.StatusInternalServerError })
		}
		return code
	})
	ep := e.addEndpoint(t, srv.URL, ordersync.HookOrderPaid, ordersync.HookOrderStatusChanged)
	_ = ep
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("A1", ordersync.StatusFinalized, 2, false), orderMsg("B2", ordersync.StatusPaid, 1, true))
	waitFor(t, 20*time.Second, "four requests", func() bool { return len(srv.requests()) == 4 })
	got := srv.requests()
	var a1 []received
	var b2At time.Time
	for _, r := range got {
		switch r.order {
		case "A1":
			a1 = append(a1, r)
		case "B2":
			b2At = r.at
		}
	}
	if len(a1) != 3 || a1[0].typ != "order.paid" || a1[1].typ != "order.paid" || a1[2].status != "FINALIZED" {
		var seen []string
		for _, r := range a1 {
			seen = append(seen, r.typ+"/"+r.status)
		}
		t.Fatalf("A1 got %v, want paid (500), paid, FINALIZED", seen)
	}
	if a1[0].id != a1[1].id {
		t.Errorf("webhook-id changed across a retry: %s, %s", a1[0].id, a1[1].id)
	}
	if gap := a1[1].at.Sub(a1[0].at); gap < 500*time.Millisecond {
		t.Errorf("retried after %v, want at least the first backoff (1s ± 50%%)", gap)
	}
	if !b2At.Before(a1[1].at) {
		t.Errorf("B2 waited for A1's retry")
	}
	if n := counterValue(t, e.reg, "ordersync_delivery_attempts_total", map[string]string{"endpoint": ep.ID, "result": "5xx"}); n != 1 {
		t.Errorf("5xx attempts = %v, want 1", n)
	}
}

// A 429 or 503's Retry-After replaces the schedule's wait. The schedule
// starts at 10ms here, so a retry that ignored the 1s asked for would come
// far sooner.
func TestDispatchHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv(code), func(t *testing.T) {
			t.Parallel()
			e := newDispatchEnv(t, func(c *worker.DispatcherConfig) { c.RetryInitial = 10 * time.Millisecond })
			srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
				if n == 0 {
					w.Header().Set("Retry-After", "1")
					return code
				}
				return http.StatusOK
			})
			e.addEndpoint(t, srv.URL)
			e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
			waitFor(t, 20*time.Second, "the retry", func() bool { return len(srv.requests()) == 2 })
			got := srv.requests()
			// Without Retry-After the first retry comes after 5-15ms.
			if gap := got[1].at.Sub(got[0].at); gap < 900*time.Millisecond {
				t.Errorf("retried after %v, want Retry-After's 1s", gap)
			}
			if got[0].id != got[1].id {
				t.Errorf("webhook-id changed: %s, %s", got[0].id, got[1].id)
			}
		})
	}
}

func strconv(code int) string { return fmt.Sprint(code) }

func TestDispatchGoneDisablesEndpoint(t *testing.T) {
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, func(int, received, http.ResponseWriter) int { return http.StatusGone })
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("A2", ordersync.StatusPaid, 1, true))
	waitFor(t, 10*time.Second, "the endpoint disabled", func() bool {
		got, err := e.db.FindEndpoint(context.Background(), ep.ID)
		return err == nil && got.Disabled && got.DisabledReason == ordersync.DisabledGone
	})
	waitFor(t, 5*time.Second, "the disabled gauge", func() bool {
		return counterValue(t, e.reg, "ordersync_delivery_endpoint_disabled", map[string]string{"endpoint": ep.ID}) == 1
	})
	// Once the dispatcher has synced the disabled endpoint its runner is
	// stopped; the window after it proves no request follows (the only
	// sleep: a thing that must not happen has no signal).
	e.synced(t)
	n := len(srv.requests())
	time.Sleep(300 * time.Millisecond)
	if len(srv.requests()) != n {
		t.Errorf("a disabled endpoint still receives: %d requests, then %d", n, len(srv.requests()))
	}
	if dls, _ := e.db.ListDeliveryDeadLetters(context.Background(), ordersync.DeliveryDeadLetterFilter{}); len(dls) != 0 {
		t.Errorf("410 made dead letters: %v", dls)
	}
	// The orders' event logs say why their events went no further.
	recs, _ := e.db.ListDeliveries(context.Background(), ordersync.DeliveryFilter{})
	if len(recs) == 0 {
		t.Error("no delivery log row after a 410")
	}
	for _, r := range recs {
		if r.Outcome != ordersync.DeliveryGone || r.Status != http.StatusGone || r.EndpointID != ep.ID {
			t.Errorf("delivery log after a 410: %+v", r)
		}
	}
}

// A 4xx other than 410 and 429 is permanent: one attempt, a dead letter
// with the answer's first KiB, and a replay sends it with the same
// webhook-id.
func TestDispatchPermanentToDeadLetterAndReplay(t *testing.T) {
	e := newDispatchEnv(t)
	fail := true
	var mu sync.Mutex
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(strings.Repeat("no such order ", 200)))
			return 0
		}
		return http.StatusOK
	})
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	var dls []*ordersync.DeliveryDeadLetter
	waitFor(t, 10*time.Second, "a delivery dead letter", func() bool {
		dls, _ = e.db.ListDeliveryDeadLetters(context.Background(), ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID})
		return len(dls) == 1
	})
	dl := dls[0]
	first := srv.requests()
	if len(first) != 1 || dl.Attempts != 1 || dl.LastStatus != 422 || len(dl.LastBody) != 1024 || dl.Event != ordersync.HookOrderPaid ||
		dl.OrderCode != "A1" || dl.WebhookID != first[0].id || string(dl.Body) != string(first[0].body) {
		t.Fatalf("%d requests; letter %+v", len(first), dl)
	}
	if recs := e.deliveries(t, "A1", 1); recs[0].Outcome != ordersync.DeliveryDeadLettered || recs[0].WebhookID != dl.WebhookID ||
		recs[0].Status != 422 || recs[0].Attempts != 1 || recs[0].OrderStatus != ordersync.StatusPaid ||
		!strings.HasPrefix(recs[0].Detail, fmt.Sprintf("dead letter %d: refused: no such order", dl.ID)) {
		t.Errorf("delivery log row of the dead letter: %+v", recs[0])
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	rep, err := e.d.ReplayDeadLetter(context.Background(), dl.ID)
	if err != nil || !rep.Delivered || rep.Status != 200 {
		t.Fatalf("ReplayDeadLetter = %+v, %v", rep, err)
	}
	got := srv.requests()
	if len(got) != 2 || got[1].id != first[0].id || got[1].verify != nil || string(got[1].body) != string(first[0].body) {
		t.Errorf("replayed request: id %s (want %s), verify %v", got[1].id, first[0].id, got[1].verify)
	}
	if dls, _ := e.db.ListDeliveryDeadLetters(context.Background(), ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID}); len(dls) != 0 {
		t.Errorf("the replayed letter is still pending")
	}
	if recs := e.deliveries(t, "A1", 1); recs[0].Outcome != ordersync.DeliveryDelivered || recs[0].Status != 200 ||
		recs[0].OrderStatus != ordersync.StatusPaid || recs[0].Detail != fmt.Sprintf("replay of delivery dead letter %d", dl.ID) {
		t.Errorf("delivery log row after the replay: %+v", recs[0])
	}
}

// An endpoint that hangs until its timeout and one that answers 500 do not
// delay a third.
func TestDispatchFailingEndpointDoesNotDelayAnother(t *testing.T) {
	e := newDispatchEnv(t)
	release := make(chan struct{})
	hang := newEndpointServer(t, hookSecret, func(int, received, http.ResponseWriter) int {
		<-release
		return http.StatusOK
	})
	t.Cleanup(func() { close(release) })
	failing := newEndpointServer(t, hookSecret, func(int, received, http.ResponseWriter) int { return http.StatusInternalServerError })
	fast := newEndpointServer(t, hookSecret, nil)
	e.addEndpoint(t, hang.URL)
	e.addEndpoint(t, failing.URL)
	e.addEndpoint(t, fast.URL)
	var msgs []ordersync.OutboxMessage
	for i := range 50 {
		msgs = append(msgs, orderMsg(fmt.Sprintf("O%d", i), ordersync.StatusPaid, 1, true))
	}
	start := time.Now()
	e.publishOrders(t, msgs...)
	waitFor(t, 10*time.Second, "the fast endpoint's 50 deliveries", func() bool { return len(fast.requests()) == 50 })
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the fast endpoint took %v", took)
	}
	if len(hang.requests()) == 0 || len(failing.requests()) == 0 {
		t.Errorf("the other endpoints were not tried: %d, %d", len(hang.requests()), len(failing.requests()))
	}
}

// Endpoints added, changed, rotated, disabled and deleted at run time take
// effect without a restart.
func TestDispatchRunTimeChanges(t *testing.T) {
	e := newDispatchEnv(t)
	ctx := context.Background()
	first := newEndpointServer(t, hookSecret, nil)
	second := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, first.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	waitFor(t, 10*time.Second, "the first delivery", func() bool { return len(first.requests()) == 1 })

	u := second.URL
	if _, err := e.db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{URL: &u}); err != nil {
		t.Fatal(err)
	}
	newSecret, _ := delivery.NewSecret()
	if _, err := e.db.RotateEndpointSecret(ctx, ep.ID, newSecret, time.Hour); err != nil {
		t.Fatal(err)
	}
	e.synced(t)
	e.publishOrders(t, orderMsg("A2", ordersync.StatusPaid, 1, true))
	waitFor(t, 10*time.Second, "a delivery to the new URL", func() bool { return len(second.requests()) == 1 })
	r := second.requests()[0]
	// Signed with the new secret and, in the grace period, the old one.
	if r.sigs != 2 || r.verify != nil || delivery.Verify(newSecret, r.headers, r.body, 0) != nil {
		t.Errorf("after rotation: %d signatures, old secret %v, new secret %v", r.sigs, r.verify, delivery.Verify(newSecret, r.headers, r.body, 0))
	}

	off := true
	if _, err := e.db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{Disabled: &off}); err != nil {
		t.Fatal(err)
	}
	e.synced(t)
	e.publishOrders(t, orderMsg("A3", ordersync.StatusPaid, 1, true))
	// A window that proves A3 is not delivered while the endpoint is
	// disabled: what must not happen has no signal to wait for.
	time.Sleep(300 * time.Millisecond)
	if n := len(second.requests()); n != 1 {
		t.Fatalf("a disabled endpoint received %d", n)
	}
	on := false
	if _, err := e.db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{Disabled: &on}); err != nil {
		t.Fatal(err)
	}
	e.d.Notify()
	// Re-enabled, its consumer resumes where it stopped: A3 arrives.
	waitFor(t, 10*time.Second, "A3 after re-enabling", func() bool { return len(second.requests()) == 2 })
	if got := second.requests()[1].order; got != "A3" {
		t.Errorf("after re-enabling got %s", got)
	}

	// Changing its events updates its consumer's filter.
	if _, err := e.db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{Events: []ordersync.HookEvent{ordersync.HookOrderStatusChanged}}); err != nil {
		t.Fatal(err)
	}
	e.synced(t)
	e.publishOrders(t, orderMsg("A4", ordersync.StatusPaid, 1, true), orderMsg("A4", ordersync.StatusFinalized, 2, false))
	waitFor(t, 10*time.Second, "A4's status change", func() bool { return len(second.requests()) == 3 })
	// A window that proves A4's PAID event, published first, is not
	// delivered after all: the filter left it out.
	time.Sleep(300 * time.Millisecond)
	if got := second.requests(); len(got) != 3 || got[2].typ != "order.status_changed" || got[2].order != "A4" {
		t.Errorf("after changing the events to status changes only: %d requests, last %s %s", len(got), got[len(got)-1].typ, got[len(got)-1].order)
	}

	if err := e.db.DeleteEndpoint(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	e.d.Notify()
	js, _ := jetstream.New(e.nc)
	waitFor(t, 10*time.Second, "the consumer deleted", func() bool {
		_, err := js.Consumer(ctx, e.queueCfg.OrdersStream, e.queueCfg.Consumer+"-endpoint-"+ep.ID)
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
}

// A replay redelivers past events with the webhook-ids of the first time.
func TestDispatchReplaySince(t *testing.T) {
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	before := time.Now().Add(-time.Second)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, false), orderMsg("A1", ordersync.StatusPaid, 1, true))
	waitFor(t, 10*time.Second, "two deliveries", func() bool { return len(srv.requests()) == 2 })
	n, err := e.d.Replay(context.Background(), ep.ID, before)
	if err != nil || n != 2 {
		t.Fatalf("Replay = %d, %v; want 2", n, err)
	}
	waitFor(t, 10*time.Second, "two replayed deliveries", func() bool { return len(srv.requests()) == 4 })
	got := srv.requests()
	for i := range 2 {
		if got[i].id != got[i+2].id || got[i].typ != got[i+2].typ {
			t.Errorf("replay %d: %s %s, first time %s %s", i, got[i+2].typ, got[i+2].id, got[i].typ, got[i].id)
		}
	}
	if n, _ := e.d.Replay(context.Background(), ep.ID, time.Now().Add(time.Minute)); n != 0 {
		t.Errorf("a replay from the future queued %d", n)
	}
}

// A replay holds no more events than MaxHeld: the rest wait in the stream
// until the endpoint takes those in flight.
func TestDispatchReplayBounded(t *testing.T) {
	t.Parallel()
	const maxHeld = 3
	e := newDispatchEnv(t, func(c *worker.DispatcherConfig) { c.MaxHeld = maxHeld })
	var (
		mu                  sync.Mutex
		hold                bool
		inFlight, most      int
		release, reachedMax = make(chan struct{}), make(chan struct{}, 1)
	)
	srv := newEndpointServer(t, hookSecret, func(int, received, http.ResponseWriter) int {
		mu.Lock()
		if !hold {
			mu.Unlock()
			return http.StatusOK
		}
		inFlight++
		most = max(most, inFlight)
		if inFlight == maxHeld {
			select {
			case reachedMax <- struct{}{}:
			default:
			}
		}
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		return http.StatusOK
	})
	ep := e.addEndpoint(t, srv.URL, ordersync.HookOrderPaid)
	before := time.Now().Add(-time.Second)
	var msgs []ordersync.OutboxMessage
	for i := range 8 {
		msgs = append(msgs, orderMsg(fmt.Sprintf("R%d", i), ordersync.StatusPaid, 1, true))
	}
	e.publishOrders(t, msgs...)
	waitFor(t, 10*time.Second, "eight deliveries", func() bool { return len(srv.requests()) == 8 })

	mu.Lock()
	hold = true
	mu.Unlock()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := e.d.Replay(context.Background(), ep.ID, before)
		done <- result{n, err}
	}()
	<-reachedMax
	// A window that proves no more than maxHeld are taken: what must not
	// happen has no signal to wait for.
	time.Sleep(300 * time.Millisecond)
	var r result
	returned := false
	select {
	case r = <-done:
		returned = true
		t.Errorf("Replay returned %+v while the endpoint held every event it may", r)
	default:
	}
	close(release)
	if !returned {
		r = <-done
	}
	if r.err != nil || r.n != 8 {
		t.Fatalf("Replay = %d, %v; want 8", r.n, r.err)
	}
	waitFor(t, 10*time.Second, "eight replayed deliveries", func() bool { return len(srv.requests()) == 16 })
	mu.Lock()
	defer mu.Unlock()
	if most != maxHeld {
		t.Errorf("%d replayed deliveries in flight at most, want %d", most, maxHeld)
	}
}

func TestDispatchPing(t *testing.T) {
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	rep, err := e.d.Ping(context.Background(), ep.ID)
	if err != nil || !rep.Delivered || rep.Status != http.StatusNoContent {
		t.Fatalf("Ping = %+v, %v", rep, err)
	}
	if r := srv.requests()[0]; r.typ != "ping" || r.verify != nil || r.id != rep.WebhookID {
		t.Errorf("ping request %s %s verify %v", r.typ, r.id, r.verify)
	}
}

// The published schedule: 1s doubling to an hour, within three days.
func TestRetrySchedule(t *testing.T) {
	s := worker.RetrySchedule(72 * time.Hour)
	if s[0] != time.Second || s[1] != 2*time.Second || s[12] != time.Hour || s[len(s)-1] != time.Hour {
		t.Errorf("schedule %v", s)
	}
	var total time.Duration
	for _, d := range s {
		total += d
	}
	if total > 72*time.Hour || total < 71*time.Hour {
		t.Errorf("the schedule spans %v, want about 72h", total)
	}
	t.Logf("%d retries over %v: %v…", len(s), total, s[:14])
}

// An endpoint that does not answer within the timeout (2s here, 10s by
// default) is retried, with the same webhook-id.
func TestDispatchTimeoutRetries(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	e := newDispatchEnv(t, func(c *worker.DispatcherConfig) { c.Timeout = timeout })
	release := make(chan struct{})
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		if n == 0 {
			select {
			case <-release:
			case <-time.After(10 * timeout):
			}
		}
		return http.StatusOK
	})
	t.Cleanup(func() { close(release) }) // before the server's Close waits for the handler
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	waitFor(t, 20*time.Second, "the retry after the timeout", func() bool { return len(srv.requests()) == 2 })
	got := srv.requests()
	if gap := got[1].at.Sub(got[0].at); gap < timeout {
		t.Errorf("retried %v after the first attempt, before the %v timeout", gap, timeout)
	}
	if got[0].id != got[1].id {
		t.Errorf("webhook-id changed: %s, %s", got[0].id, got[1].id)
	}
	waitFor(t, 5*time.Second, "the delivered count", func() bool {
		return counterValue(t, e.reg, "ordersync_delivery_events_total", map[string]string{"endpoint": ep.ID, "outcome": "delivered"}) == 1
	})
	if n := counterValue(t, e.reg, "ordersync_delivery_attempts_total", map[string]string{"endpoint": ep.ID, "result": "timeout"}); n != 1 {
		t.Errorf("timeout attempts = %v, want 1", n)
	}
}

// Failures that outlast the retry window end in a dead letter with the last
// answer. The window is shortened here: the default is 72h.
func TestDispatchRetriesExhausted(t *testing.T) {
	e := &dispatchEnv{env: newEnv(t, sim.Faults{})}
	d, err := worker.NewDispatcher(worker.DispatcherConfig{
		Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q, Registerer: e.reg, Logger: e.logger, RetryWindow: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := newEndpointServer(t, hookSecret, func(int, received, http.ResponseWriter) int { return http.StatusBadGateway })
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	var dls []*ordersync.DeliveryDeadLetter
	waitFor(t, 15*time.Second, "a dead letter", func() bool {
		dls, _ = e.db.ListDeliveryDeadLetters(context.Background(), ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID})
		return len(dls) == 1
	})
	if dl := dls[0]; dl.Attempts < 2 || dl.Attempts != len(srv.requests()) || dl.LastStatus != http.StatusBadGateway {
		t.Errorf("letter after %d requests: %+v", len(srv.requests()), dl)
	}
}

// An endpoint with a rate gets at most that many requests per second.
func TestDispatchRate(t *testing.T) {
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	ep, err := e.db.CreateEndpoint(context.Background(), ordersync.EndpointParams{
		URL: srv.URL, Events: []ordersync.HookEvent{ordersync.HookOrderPaid}, Secret: hookSecret, RatePerSecond: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.d.Notify()
	e.waitConsumer(t, ep.ID)
	var msgs []ordersync.OutboxMessage
	for i := range 9 {
		msgs = append(msgs, orderMsg(fmt.Sprintf("R%d", i), ordersync.StatusPaid, 1, true))
	}
	e.publishOrders(t, msgs...)
	waitFor(t, 10*time.Second, "nine deliveries", func() bool { return len(srv.requests()) == 9 })
	got := srv.requests()
	// One at once, then one every 250ms: eight gaps of 250ms.
	if span := got[8].at.Sub(got[0].at); span < 1900*time.Millisecond {
		t.Errorf("nine deliveries at 4/s took %v, want about 2s", span)
	}
}

// An event waiting behind its order's retried one for longer than the
// consumer's ack wait (shortened here from 30s) is neither handed out again
// nor delivered twice.
func TestDispatchWaitingEventOutlastsAckWait(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, func(c *worker.DispatcherConfig) { c.AckWait = shortAckWait })
	var first sync.Once
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		code := http.StatusOK
		first.Do(func() {
			// Beyond the ack wait, by more than one extension's period.
			w.Header().Set("Retry-After", fmt.Sprint(int(2*shortAckWait/time.Second)))
			code = http.StatusServiceUnavailable
		})
		return code
	})
	e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("A1", ordersync.StatusFinalized, 2, false))
	waitFor(t, 60*time.Second, "three requests", func() bool { return len(srv.requests()) >= 3 })
	// A window that proves no event is delivered again: what must not
	// happen has no signal to wait for.
	time.Sleep(2 * time.Second)
	got := srv.requests()
	var seen []string
	for _, r := range got {
		seen = append(seen, r.typ+"/"+r.status)
	}
	if len(got) != 3 || got[0].typ != "order.paid" || got[1].typ != "order.paid" || got[2].status != "FINALIZED" {
		t.Errorf("requests %v, want paid (503), paid, FINALIZED once", seen)
	}
}

// A dispatcher that stops while it holds an order's event, unsettled,
// hands over to another (as when the deliveries lease moves): the next one
// must deliver that event before the order's later one, although the queue
// hands the held event out again only after the ack wait while the later
// one is there at once.
func TestDispatchTakeoverKeepsOrder(t *testing.T) {
	t.Parallel()
	// Both holders use the short ack wait, the second waits it out.
	short := func(c *worker.DispatcherConfig) { c.AckWait = shortAckWait }
	e := newDispatchEnv(t, short)
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		if n == 0 { // the first holder's attempt: it keeps the event to retry
			w.Header().Set("Retry-After", "60")
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	waitFor(t, 10*time.Second, "the first attempt", func() bool { return len(srv.requests()) == 1 })
	// The first holder stops with PAID unsettled; the cleanup still waits
	// for its Run.
	e.cancel()
	err := <-e.done
	e.done <- err

	e.publishOrders(t, orderMsg("A1", ordersync.StatusFinalized, 2, false))
	cfg := worker.DispatcherConfig{
		Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q, Registerer: prometheus.NewRegistry(), Logger: e.logger,
	}
	short(&cfg)
	next, err := worker.NewDispatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- next.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitFor(t, 60*time.Second, "PAID and FINALIZED delivered", func() bool { return len(srv.requests()) >= 3 })
	// A window that proves nothing more arrives: what must not happen has
	// no signal to wait for.
	time.Sleep(time.Second)
	var seen []string
	for _, r := range srv.requests() {
		seen = append(seen, r.typ+"/"+r.status)
	}
	if want := []string{"order.paid/PAID", "order.paid/PAID", "order.status_changed/FINALIZED"}; !slices.Equal(seen, want) {
		t.Errorf("the endpoint received %v, want %v (PAID refused, then PAID and FINALIZED in order)", seen, want)
	}
}
