package dispatch_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
)

// A replay redelivers past events with the webhook-ids of the first time.
func TestDispatchReplaySince(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	before := time.Now().Add(-time.Second)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, false), orderMsg("A1", ordersync.StatusPaid, 1, true))
	testenv.WaitFor(t, 10*time.Second, "two deliveries", func() bool { return len(srv.requests()) == 2 })
	n, err := e.d.Replay(context.Background(), ep.ID, before)
	if err != nil || n != 2 {
		t.Fatalf("Replay = %d, %v; want 2", n, err)
	}
	testenv.WaitFor(t, 10*time.Second, "two replayed deliveries", func() bool { return len(srv.requests()) == 4 })
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
	e := newDispatchEnv(t, func(c *dispatch.Config) { c.MaxHeld = maxHeld })
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
	testenv.WaitFor(t, 10*time.Second, "eight deliveries", func() bool { return len(srv.requests()) == 8 })

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
	// happen has no signal to wait for, and the replay reads a real
	// JetStream stream, which cannot run in a synctest bubble.
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
	testenv.WaitFor(t, 10*time.Second, "eight replayed deliveries", func() bool { return len(srv.requests()) == 16 })
	mu.Lock()
	defer mu.Unlock()
	if most != maxHeld {
		t.Errorf("%d replayed deliveries in flight at most, want %d", most, maxHeld)
	}
}

func TestDispatchPing(t *testing.T) {
	t.Parallel()
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

// A replay since a time that delivers an event dead-lettered before
// settles its delivery dead letter: the endpoint's failed deliveries (the
// count the Endpoints page and the overview show) drop to none, while
// what the log says and what is pending agree.
func TestDispatchReplaySinceSettlesDeadLetters(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	var refuse atomic.Bool
	refuse.Store(true)
	srv := newEndpointServer(t, hookSecret, func(_ int, rec received, _ http.ResponseWriter) int {
		if rec.order == "B1" && refuse.Load() {
			return http.StatusUnprocessableEntity // refused for good: a dead letter
		}
		return http.StatusNoContent
	})
	ep := e.addEndpoint(t, srv.URL, ordersync.HookOrderPaid)
	before := time.Now().Add(-time.Second)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("B1", ordersync.StatusPaid, 1, true))
	e.deliveries(t, "A1", 1)
	if recs := e.deliveries(t, "B1", 1); recs[0].Outcome != ordersync.DeliveryDeadLettered {
		t.Fatalf("B1's delivery: %+v, want dead-lettered", recs[0])
	}
	ctx := context.Background()
	if pending, err := e.db.PendingDeliveryDeadLetters(ctx); err != nil || pending[ep.ID] != 1 {
		t.Fatalf("failed deliveries before the replay: %v, %v; want 1", pending, err)
	}
	refuse.Store(false)
	if n, err := e.d.Replay(ctx, ep.ID, before); err != nil || n != 2 {
		t.Fatalf("Replay = %d, %v; want 2", n, err)
	}
	testenv.WaitFor(t, 10*time.Second, "B1 delivered by the replay", func() bool {
		recs, err := e.db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default", OrderCode: "B1"})
		return err == nil && len(recs) == 1 && recs[0].Outcome == ordersync.DeliveryDelivered
	})
	if pending, err := e.db.PendingDeliveryDeadLetters(ctx); err != nil || pending[ep.ID] != 0 {
		t.Errorf("failed deliveries after the replay delivered them: %v, %v; want none", pending, err)
	}
}
