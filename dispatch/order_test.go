package dispatch_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
)

// An event waiting behind its order's retried one for longer than the
// consumer's ack wait (shortened here from 30s) is neither handed out again
// nor delivered twice.
func TestDispatchWaitingEventOutlastsAckWait(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t, func(c *dispatch.Config) { c.AckWait = shortAckWait })
	var first sync.Once
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		code := http.StatusOK
		first.Do(func() {
			// Beyond the ack wait, by more than one extension's period
			// (a third of the ack wait), in whole seconds.
			w.Header().Set("Retry-After", fmt.Sprint(int((shortAckWait+shortAckWait/3)/time.Second)+1))
			code = http.StatusServiceUnavailable
		})
		return code
	})
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true), orderMsg("A1", ordersync.StatusFinalized, 2, false))
	testenv.WaitFor(t, 60*time.Second, "three requests", func() bool { return len(srv.requests()) >= 3 })
	// The consumer's sequence counts every hand-out, again after an ack
	// wait included; once all is settled nothing more arrives.
	if info := e.settled(t, ep.ID); info.Delivered.Consumer != 2 {
		t.Errorf("the consumer handed out %d events, want the 2 once each", info.Delivered.Consumer)
	}
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
	short := func(c *dispatch.Config) { c.AckWait = shortAckWait }
	e := newDispatchEnv(t, short)
	srv := newEndpointServer(t, hookSecret, func(n int, r received, w http.ResponseWriter) int {
		if n == 0 { // the first holder's attempt: it keeps the event to retry
			w.Header().Set("Retry-After", "60")
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	ep := e.addEndpoint(t, srv.URL)
	e.publishOrders(t, orderMsg("A1", ordersync.StatusPaid, 1, true))
	testenv.WaitFor(t, 10*time.Second, "the first attempt", func() bool { return len(srv.requests()) == 1 })
	// The first holder stops with PAID unsettled; the cleanup still waits
	// for its Run.
	e.cancel()
	err := <-e.done
	e.done <- err

	e.publishOrders(t, orderMsg("A1", ordersync.StatusFinalized, 2, false))
	cfg := dispatch.Config{
		Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q, Registerer: prometheus.NewRegistry(), Logger: e.logger,
	}
	short(&cfg)
	next, err := dispatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- next.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	testenv.WaitFor(t, 60*time.Second, "PAID and FINALIZED delivered", func() bool { return len(srv.requests()) >= 3 })
	// Once the consumer has every event acknowledged nothing more arrives.
	e.settled(t, ep.ID)
	var seen []string
	for _, r := range srv.requests() {
		seen = append(seen, r.typ+"/"+r.status)
	}
	if want := []string{"order.paid/PAID", "order.paid/PAID", "order.status_changed/FINALIZED"}; !slices.Equal(seen, want) {
		t.Errorf("the endpoint received %v, want %v (PAID refused, then PAID and FINALIZED in order)", seen, want)
	}
}
