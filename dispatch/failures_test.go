package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
)

func TestDispatchGoneDisablesEndpoint(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, func(int, received, http.ResponseWriter) int { return http.StatusGone })
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("A2", ordersync.StatusPaid, 1, true))
	// The 410's delivery log row is in before the endpoint reads as
	// disabled: the dispatcher's next sync stops the runner, and a row
	// written after that could be lost.
	rowsAtDisable := -1
	testenv.WaitFor(t, 10*time.Second, "the endpoint disabled", func() bool {
		got, err := e.db.FindEndpoint(context.Background(), ep.ID)
		if err != nil || !got.Disabled || got.DisabledReason != ordersync.DisabledGone {
			return false
		}
		recs, _ := e.db.ListDeliveries(context.Background(), ordersync.DeliveryFilter{})
		rowsAtDisable = len(recs)
		return true
	})
	if rowsAtDisable == 0 {
		t.Error("the endpoint read as disabled before its 410 was in the delivery log")
	}
	testenv.WaitFor(t, 5*time.Second, "the disabled gauge", func() bool {
		return testenv.MetricSum(t, e.reg, "ordersync_delivery_endpoint_disabled", map[string]string{"endpoint": ep.ID}) == 1
	})
	// Once the dispatcher has synced the disabled endpoint its runner is
	// stopped; the window after it proves no request follows (the only
	// sleep: a thing that must not happen has no signal, and the endpoint's
	// JetStream consumer and HTTP server cannot run in a synctest bubble).
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
	t.Parallel()
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
	testenv.WaitFor(t, 10*time.Second, "a delivery dead letter", func() bool {
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

// An endpoint that does not answer within the timeout (2s here, 10s by
// default) is retried, with the same webhook-id.
func TestDispatchTimeoutRetries(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	e := newDispatchEnv(t, func(c *dispatch.Config) { c.Timeout = timeout })
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
	testenv.WaitFor(t, 20*time.Second, "the retry after the timeout", func() bool { return len(srv.requests()) == 2 })
	got := srv.requests()
	if gap := got[1].at.Sub(got[0].at); gap < timeout {
		t.Errorf("retried %v after the first attempt, before the %v timeout", gap, timeout)
	}
	if got[0].id != got[1].id {
		t.Errorf("webhook-id changed: %s, %s", got[0].id, got[1].id)
	}
	testenv.WaitFor(t, 5*time.Second, "the delivered count", func() bool {
		return testenv.MetricSum(t, e.reg, "ordersync_delivery_events_total", map[string]string{"endpoint": ep.ID, "outcome": "delivered"}) == 1
	})
	if n := testenv.MetricSum(t, e.reg, "ordersync_delivery_attempts_total", map[string]string{"endpoint": ep.ID, "result": "timeout"}); n != 1 {
		t.Errorf("timeout attempts = %v, want 1", n)
	}
}

// Failures that outlast the retry window end in a dead letter with the last
// answer. The window is shortened here: the default is 72h. It counts from
// the publish, so the retries start at 100ms (1s by default): a first
// attempt that a loaded machine makes late still has retries in the window.
func TestDispatchRetriesExhausted(t *testing.T) {
	t.Parallel()
	e := &dispatchEnv{env: newEnv(t)}
	d, err := dispatch.New(dispatch.Config{
		Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q, Registerer: e.reg, Logger: e.logger,
		RetryWindow: 3 * time.Second, RetryInitial: 100 * time.Millisecond,
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
	testenv.WaitFor(t, 15*time.Second, "a dead letter", func() bool {
		dls, _ = e.db.ListDeliveryDeadLetters(context.Background(), ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID})
		return len(dls) == 1
	})
	if dl := dls[0]; dl.Attempts < 2 || dl.Attempts != len(srv.requests()) || dl.LastStatus != http.StatusBadGateway {
		t.Errorf("letter after %d requests: %+v", len(srv.requests()), dl)
	}
}

// failingLetters fails the first dead letter it is asked to store, and
// closes failed then.
type failingLetters struct {
	ordersync.DeliveryDeadLetters
	once   sync.Once
	failed chan struct{}
}

func (f *failingLetters) AddDeliveryDeadLetter(ctx context.Context, l ordersync.DeliveryDeadLetter) (int64, error) {
	fail := false
	f.once.Do(func() { fail = true })
	if fail {
		defer close(f.failed)
		return 0, errors.New("the database is away")
	}
	return f.DeliveryDeadLetters.AddDeliveryDeadLetter(ctx, l)
}

// TestDispatchUnsettledEventKeepsItsPlace: an event the dispatcher could
// not settle (here its dead letter could not be stored) is tried again
// ahead of its order's later events, not left to come back after the ack
// wait while a later event published meanwhile goes first.
func TestDispatchUnsettledEventKeepsItsPlace(t *testing.T) {
	t.Parallel()
	letters := &failingLetters{failed: make(chan struct{})}
	e := newDispatchEnv(t, func(c *dispatch.Config) {
		letters.DeliveryDeadLetters = c.DeadLetters
		c.DeadLetters = letters
		c.RetryInitial = 50 * time.Millisecond
	})
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		if r.status == string(ordersync.StatusPending) {
			return http.StatusUnprocessableEntity
		}
		return http.StatusNoContent
	})
	ep := e.addEndpoint(t, srv.URL, ordersync.HookOrderStatusChanged)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPending, 1, false))
	<-letters.failed
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 2, false))
	testenv.WaitFor(t, 10*time.Second, "the PAID change delivered", func() bool {
		for _, r := range srv.requests() {
			if r.status == string(ordersync.StatusPaid) {
				return true
			}
		}
		return false
	})
	var got []string
	for _, r := range srv.requests() {
		got = append(got, r.status)
	}
	if want := []string{"PENDING", "PENDING", "PAID"}; !slices.Equal(got, want) {
		t.Errorf("the endpoint received %v, want %v: the later change went first", got, want)
	}
	if dls, err := e.db.ListDeliveryDeadLetters(context.Background(), ordersync.DeliveryDeadLetterFilter{EndpointID: ep.ID}); err != nil || len(dls) != 1 {
		t.Errorf("dead letters: %d, %v; want the PENDING change's", len(dls), err)
	}
}
