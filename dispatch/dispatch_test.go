package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
)

func TestDispatchDeliversSignedEvents(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	paidOnly := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	po := e.addEndpoint(t, paidOnly.URL, ordersync.HookOrderPaid)
	paidChange, paid := orderMsg("A1", ordersync.StatusPaid, 2, false), orderMsg("A1", ordersync.StatusPaid, 2, true)
	paidChange.From, paid.From = ordersync.StatusPending, ordersync.StatusPending
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPending, 1, false), paidChange, paid)
	testenv.WaitFor(t, 10*time.Second, "three deliveries", func() bool { return len(srv.requests()) == 3 && len(paidOnly.requests()) == 1 })
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
	// The delivery log: one row per event and endpoint, as each ended.
	recs := e.deliveries(t, "A1", 4)
	// The counter moves when the answer is read, after the endpoint has
	// seen the request and before the event's row goes in.
	if n := testenv.MetricSum(t, e.reg, "ordersync_delivery_events_total", map[string]string{"endpoint": ep.ID, "outcome": "delivered"}); n != 3 {
		t.Errorf("delivered events metric = %v, want 3", n)
	}
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
	t.Parallel()
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
	testenv.WaitFor(t, 20*time.Second, "four requests", func() bool { return len(srv.requests()) == 4 })
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
	if n := testenv.MetricSum(t, e.reg, "ordersync_delivery_attempts_total", map[string]string{"endpoint": ep.ID, "result": "5xx"}); n != 1 {
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
			e := newDispatchEnv(t, func(c *dispatch.Config) { c.RetryInitial = 10 * time.Millisecond })
			srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
				if n == 0 {
					w.Header().Set("Retry-After", "1")
					return code
				}
				return http.StatusOK
			})
			e.addEndpoint(t, srv.URL)
			e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
			testenv.WaitFor(t, 20*time.Second, "the retry", func() bool { return len(srv.requests()) == 2 })
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
	testenv.WaitFor(t, 10*time.Second, "the fast endpoint's 50 deliveries", func() bool { return len(fast.requests()) == 50 })
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the fast endpoint took %v", took)
	}
	// The fast endpoint can be done before the others' first request has
	// arrived: that they are tried is waited for, not read at once.
	testenv.WaitFor(t, 10*time.Second, "the hanging and failing endpoints' first requests", func() bool {
		return len(hang.requests()) > 0 && len(failing.requests()) > 0
	})
}

// Endpoints added, changed, rotated, disabled and deleted at run time take
// effect without a restart.
func TestDispatchRunTimeChanges(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	ctx := context.Background()
	first := newEndpointServer(t, hookSecret, nil)
	second := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, first.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	testenv.WaitFor(t, 10*time.Second, "the first delivery", func() bool { return len(first.requests()) == 1 })
	// Each change below stops the endpoint's runner, which abandons a
	// request it has not read the answer of, and the event goes again:
	// the endpoint having seen a request is not yet a settled event.
	e.settled(t, ep.ID)

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
	testenv.WaitFor(t, 10*time.Second, "a delivery to the new URL", func() bool { return len(second.requests()) == 1 })
	e.settled(t, ep.ID)
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
	// disabled: what must not happen has no signal to wait for, and a
	// synctest bubble cannot hold the subject, the endpoint's JetStream
	// consumer (its server's goroutines and sockets are outside it, so
	// synctest.Wait cannot tell that nothing is on its way).
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
	testenv.WaitFor(t, 10*time.Second, "A3 after re-enabling", func() bool { return len(second.requests()) == 2 })
	if got := second.requests()[1].order; got != "A3" {
		t.Errorf("after re-enabling got %s", got)
	}

	// Changing its events updates its consumer's filter.
	if _, err := e.db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{Events: []ordersync.HookEvent{ordersync.HookOrderStatusChanged}}); err != nil {
		t.Fatal(err)
	}
	e.synced(t)
	e.publishOrders(t, orderMsg("A4", ordersync.StatusPaid, 1, true), orderMsg("A4", ordersync.StatusFinalized, 2, false))
	// A4's PAID event, published first, would reach the endpoint before
	// its status change, in the same lane: that the third request is the
	// status change proves the filter left PAID out, with no window.
	testenv.WaitFor(t, 10*time.Second, "A4's status change", func() bool { return len(second.requests()) >= 3 })
	if got := second.requests(); len(got) != 3 || got[2].typ != "order.status_changed" || got[2].order != "A4" {
		t.Errorf("after changing the events to status changes only: %d requests, last %s %s", len(got), got[len(got)-1].typ, got[len(got)-1].order)
	}

	if err := e.db.DeleteEndpoint(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	e.d.Notify()
	js, _ := jetstream.New(e.nc)
	testenv.WaitFor(t, 10*time.Second, "the consumer deleted", func() bool {
		_, err := js.Consumer(ctx, e.queueCfg.OrdersStream, e.queueCfg.Consumer+"-endpoint-"+ep.ID)
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
}

// The published schedule: 1s doubling to an hour, within three days.
func TestRetrySchedule(t *testing.T) {
	s := dispatch.RetrySchedule(72 * time.Hour)
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

// An endpoint with a rate gets at most that many requests per second. The
// bound is each request's earliest turn, which a loaded machine only
// delays: the test runs in parallel.
func TestDispatchRate(t *testing.T) {
	t.Parallel()
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
	// Before the first request can leave: the k-th (from 0) leaves at
	// least k intervals of 250ms after it. A request arrives at or after
	// it leaves, so a busy machine cannot make one look early; timed from
	// the first arrival instead, a late first one shortened the span.
	start := time.Now()
	e.publishOrders(t, msgs...)
	testenv.WaitFor(t, 10*time.Second, "nine deliveries", func() bool { return len(srv.requests()) == 9 })
	for k, r := range srv.requests() {
		if earliest := time.Duration(k) * time.Second / 4; r.at.Sub(start) < earliest-time.Millisecond {
			t.Errorf("delivery %d arrived %v after the start, before its turn at %v for 4/s", k+1, r.at.Sub(start), earliest)
		}
	}
}

// TestDispatchKeepsConnections: a burst to one endpoint reuses the
// connections of the requests in flight instead of dialling one per
// delivery beyond the transport's default two idle connections per host,
// nor one more when a request races the connection coming back (on a
// loaded machine, 4 of 40 runs without the per-host bound).
func TestDispatchKeepsConnections(t *testing.T) {
	const concurrency, events = 4, 200
	e := newDispatchEnv(t, func(c *dispatch.Config) { c.Concurrency = concurrency })
	var mu sync.Mutex
	conns, requests := 0, 0
	// The first requests wait until concurrency are in flight, so that
	// every connection the dispatcher may keep is open at once.
	full := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		if requests == concurrency {
			close(full)
		}
		mu.Unlock()
		select {
		case <-full:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	e.addEndpoint(t, srv.URL)
	msgs := make([]ordersync.OutboxMessage, events)
	for i := range msgs {
		msgs[i] = orderMsg(fmt.Sprintf("K%03d", i), ordersync.StatusPending, 1, false)
	}
	e.publishOrders(t, msgs...)
	testenv.WaitFor(t, 30*time.Second, "every delivery", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return requests == events
	})
	mu.Lock()
	defer mu.Unlock()
	if conns > concurrency {
		t.Errorf("%d connections for %d deliveries, at most %d in flight: want at most %d", conns, events, concurrency, concurrency)
	}
}
