package dispatch_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
)

// gatedLog is the delivery log with its first write held until open is
// closed; entered is closed when that write begins.
type gatedLog struct {
	ordersync.DeliveryLog
	once          sync.Once
	entered, open chan struct{}
}

func (g *gatedLog) RecordDeliveries(ctx context.Context, recs []ordersync.DeliveryRecord) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.open
	})
	return g.DeliveryLog.RecordDeliveries(ctx, recs)
}

// disable turns the endpoint off or on and returns once the dispatcher
// has acted on it: its runner is stopped, or a new one started.
func (e *dispatchEnv) disable(t testing.TB, id string, off bool) {
	t.Helper()
	if _, err := e.db.UpdateEndpoint(context.Background(), id, ordersync.EndpointUpdate{Disabled: &off}); err != nil {
		t.Fatal(err)
	}
	e.synced(t)
}

// ackPending is how many events the endpoint's consumer counts as handed
// out and not settled.
func (e *dispatchEnv) ackPending(t testing.TB, id string) int {
	t.Helper()
	return e.consumerInfo(t, id).NumAckPending
}

// consumerInfo is the endpoint's consumer as its JetStream server counts.
func (e *dispatchEnv) consumerInfo(t testing.TB, id string) *jetstream.ConsumerInfo {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(context.Background(), e.queueCfg.OrdersStream, e.queueCfg.Consumer+"-endpoint-"+id)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// settled waits until the endpoint's consumer has every event handed out
// and acknowledged, and returns its count then: after that nothing more
// can reach the endpoint (a request is recorded before its ack), so "no
// more deliveries" needs no window.
func (e *dispatchEnv) settled(t testing.TB, id string) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	testenv.Await(t, 30*time.Second, 20*time.Millisecond, func() error {
		info = e.consumerInfo(t, id)
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("endpoint %s: %d events not handed out, %d not acknowledged", id, info.NumPending, info.NumAckPending)
		}
		return nil
	})
	return info
}

// A runner stopped after the endpoint answered 2xx, while the delivery's
// log row is being written, still settles the event. Left unsettled, the
// endpoint's next runner would wait out the ack wait (an hour here) before
// anything later, then deliver it again: TestDispatchRunTimeChanges's
// "A3 after re-enabling" under load.
func TestDispatchStopSettlesWhatWasDelivered(t *testing.T) {
	t.Parallel()
	gate := &gatedLog{entered: make(chan struct{}), open: make(chan struct{})}
	e := newDispatchEnv(t, func(c *dispatch.Config) {
		c.AckWait = time.Hour
		gate.DeliveryLog, c.Log = c.Log, gate
	})
	srv := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	select {
	case <-gate.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for A1's delivery log row")
	}
	e.disable(t, ep.ID, true)
	close(gate.open)
	testenv.WaitFor(t, 10*time.Second, "A1 settled by the stopped runner", func() bool { return e.ackPending(t, ep.ID) == 0 })

	e.publishOrders(t, orderMsg("A2", ordersync.StatusPaid, 1, true))
	e.disable(t, ep.ID, false)
	testenv.WaitFor(t, 10*time.Second, "A2 after re-enabling", func() bool { return len(srv.requests()) >= 2 })
	if got := srv.requests(); len(got) != 2 || got[0].order != "A1" || got[1].order != "A2" {
		var orders []string
		for _, r := range got {
			orders = append(orders, r.order)
		}
		t.Errorf("the endpoint got %v, want [A1 A2]", orders)
	}
	e.deliveries(t, "A1", 1)
}

// A runner stopped while an event waits for its retry hands it back: the
// endpoint's next runner delivers it at once, not after the ack wait.
func TestDispatchStopReleasesWhatIsHeld(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, func(c *dispatch.Config) {
		c.AckWait, c.RetryInitial = time.Hour, time.Hour
	})
	srv := newEndpointServer(t, hookSecret, func(n int, _ received, _ http.ResponseWriter) int {
		if n == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("A1", ordersync.StatusFinalized, 2, false))
	testenv.WaitFor(t, 10*time.Second, "A1's first attempt", func() bool { return len(srv.requests()) == 1 })
	e.disable(t, ep.ID, true)
	e.disable(t, ep.ID, false)
	testenv.WaitFor(t, 10*time.Second, "A1's events after re-enabling", func() bool { return len(srv.requests()) >= 3 })
	got := srv.requests()
	if len(got) != 3 || got[1].typ != "order.paid" || got[1].id != got[0].id || got[2].status != "FINALIZED" {
		t.Errorf("after re-enabling: %d requests, want A1's PAID again and then its FINALIZED", len(got))
	}
	testenv.WaitFor(t, 10*time.Second, "nothing unsettled", func() bool { return e.ackPending(t, ep.ID) == 0 })
}

// A runner restarted at once (disabled and enabled again; the same for a
// change of its events) keeps an order's events in order. The stopped
// runner's long poll stayed open at the server for up to 30s: it took the
// next event and refused it, while the new runner, already past Resume,
// delivered the order's later events first.
func TestDispatchRestartKeepsOrder(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A0", ordersync.StatusPaid, 1, true))
	testenv.WaitFor(t, 10*time.Second, "A0 settled", func() bool { return len(srv.requests()) == 1 && e.ackPending(t, ep.ID) == 0 })
	// The runner is idle in its long poll when it is stopped.
	e.disable(t, ep.ID, true)
	e.disable(t, ep.ID, false)
	var msgs []ordersync.OutboxMessage
	for i := 1; i <= 4; i++ {
		msgs = append(msgs, orderMsg("A1", ordersync.Status(fmt.Sprint("S", i)), i, false))
	}
	e.publishOrders(t, msgs...)
	testenv.WaitFor(t, 10*time.Second, "A1's four events", func() bool { return len(srv.requests()) >= 5 })
	var got []string
	for _, r := range srv.requests()[1:] {
		got = append(got, r.status)
	}
	if want := []string{"S1", "S2", "S3", "S4"}; !slices.Equal(got, want) {
		t.Errorf("after a restart the endpoint got %v, want %v", got, want)
	}
}
