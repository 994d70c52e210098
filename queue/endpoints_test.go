package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ordersync/ordersync"
)

// TestResumeTakesBackFirst: events a reader refused come back to the next
// reader of the endpoint's consumer before a later one, in the order
// published although refused in reverse; and Resume waits for events still
// held only within its bound.
func TestResumeTakesBackFirst(t *testing.T) {
	_, q := embeddedQueue(t, uniqueConfig())
	ctx := context.Background()
	msg := func(status ordersync.Status, n int) ordersync.OutboxMessage {
		return ordersync.OutboxMessage{Subject: ordersync.SubjectStatusPrefix + string(status), MsgID: fmt.Sprintf("A1:%d", n),
			Payload: fmt.Appendf(nil, `{"orderCode":"A1","orderStatus":%q}`, status)}
	}
	from := time.Now().Add(-time.Minute)
	open := func() ordersync.OrderEventSource {
		t.Helper()
		src, err := q.EndpointEvents(ctx, "ep1", ordersync.HookEvents, from, 0)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	first := open()
	if _, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{msg(ordersync.StatusPending, 1), msg(ordersync.StatusPaid, 2)}); err != nil {
		t.Fatal(err)
	}
	var held []ordersync.QueuedOrderEvent
	for deadline := time.Now().Add(5 * time.Second); len(held) < 2 && time.Now().Before(deadline); {
		ds, err := first.Next(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ds...)
	}
	if len(held) != 2 {
		t.Fatalf("the first reader got %d events, want 2", len(held))
	}
	for _, d := range slices.Backward(held) {
		if err := d.(*queuedOrderEvent).msg.Nak(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{msg(ordersync.StatusFinalized, 3)}); err != nil {
		t.Fatal(err)
	}

	next := open()
	start := time.Now()
	if err := next.Resume(ctx, start); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Resume took %v for events already refused, want them back at once", took)
	}
	var ids []string
	for deadline := time.Now().Add(5 * time.Second); len(ids) < 3 && time.Now().Before(deadline); {
		ds, err := next.Next(ctx, 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) > 1 {
			t.Errorf("Next(max 1) after Resume returned %d events", len(ds))
		}
		for _, d := range ds {
			ids = append(ids, d.Event().MsgID)
		}
	}
	if want := []string{"A1:1", "A1:2", "A1:3"}; !slices.Equal(ids, want) {
		t.Errorf("the next reader got %v, want %v", ids, want)
	}

	// Those three are held, unsettled. A reader whose predecessor stopped
	// longer ago than the ack wait does not wait for them.
	late := open()
	start = time.Now()
	if err := late.Resume(ctx, start.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Resume past its bound took %v", took)
	}
}

// TestStoppedReaderReleases: a reader whose context ended hands back what
// it holds and has not returned, the events Resume took back included, so
// the next reader's Resume has them at once rather than after the ack wait
// (an hour here).
func TestStoppedReaderReleases(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	ctx := context.Background()
	from := time.Now().Add(-time.Minute)
	open := func() ordersync.OrderEventSource {
		t.Helper()
		src, err := q.EndpointEvents(ctx, "ep1", ordersync.HookEvents, from, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	first := open()
	var msgs []ordersync.OutboxMessage
	for i, status := range []ordersync.Status{ordersync.StatusPending, ordersync.StatusPaid, ordersync.StatusFinalized} {
		msgs = append(msgs, ordersync.OutboxMessage{Subject: ordersync.SubjectStatusPrefix + string(status), MsgID: fmt.Sprintf("A1:%d", i+1),
			Payload: fmt.Appendf(nil, `{"orderCode":"A1","orderStatus":%q}`, status)})
	}
	if _, err := q.PublishMessages(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var held []ordersync.QueuedOrderEvent
	for deadline := time.Now().Add(5 * time.Second); len(held) < 3 && time.Now().Before(deadline); {
		ds, err := first.Next(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ds...)
	}
	if len(held) != 3 {
		t.Fatalf("the first reader got %d events, want 3", len(held))
	}
	for _, d := range held {
		if err := d.Release(); err != nil {
			t.Fatal(err)
		}
	}

	// The second takes them back, returns one and stops.
	second := open()
	if err := second.Resume(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	ds, err := second.Next(ctx, 1, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Next after Resume: %d events, %v", len(ds), err)
	}
	if err := ds[0].Release(); err != nil {
		t.Fatal(err)
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	if ds, err := second.Next(stopped, 10, time.Second); err == nil || len(ds) != 0 {
		t.Errorf("Next with its context ended: %d events, error %v", len(ds), err)
	}

	third := open()
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := third.Resume(bounded, time.Now()); err != nil {
		t.Fatalf("Resume after a reader that released what it held: %v", err)
	}
	var ids []string
	for deadline := time.Now().Add(5 * time.Second); len(ids) < 3 && time.Now().Before(deadline); {
		ds, err := third.Next(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			ids = append(ids, d.Event().MsgID)
		}
	}
	if want := []string{"A1:1", "A1:2", "A1:3"}; !slices.Equal(ids, want) {
		t.Errorf("the third reader got %v, want %v", ids, want)
	}
}

// TestNextHoldsWhatFollowsALostDelivery: a delivery the server sent and no
// reader received (here another pull takes it and drops it, as a pull the
// client gave up on just as the server answered it does) comes back only
// after its ack wait. The reader notices the gap in the consumer's
// delivery sequence and holds what came after it until it is back, so the
// order's second event is not returned before its first.
func TestNextHoldsWhatFollowsALostDelivery(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const ackWait = 2 * time.Second
	src, err := q.EndpointEvents(ctx, "ep1", ordersync.HookEvents, time.Now().Add(-time.Minute), ackWait)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Resume(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	publish := func(order string, n int, status ordersync.Status) {
		t.Helper()
		m := ordersync.OutboxMessage{Subject: ordersync.SubjectStatusPrefix + string(status), MsgID: fmt.Sprintf("%s:%d", order, n),
			Payload: fmt.Appendf(nil, `{"orderCode":%q,"orderStatus":%q}`, order, status)}
		if _, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{m}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	next := func(want int) {
		t.Helper()
		for n := len(got) + want; len(got) < n; {
			ds, err := src.Next(ctx, 10, time.Second)
			if err != nil {
				t.Fatalf("Next after %v: %v", got, err)
			}
			for _, d := range ds {
				got = append(got, d.Event().MsgID)
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	publish("B", 1, ordersync.StatusPending)
	next(1)

	// Another pull takes A's first event and drops it.
	publish("A", 1, ordersync.StatusPending)
	thief, err := q.js.Consumer(ctx, q.cfg.OrdersStream, q.endpointConsumer("ep1"))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := thief.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for m := range batch.Messages() {
		dropped = append(dropped, m.Headers().Get(jetstream.MsgIDHeader))
	}
	if !slices.Equal(dropped, []string{"A:1"}) {
		t.Fatalf("the other pull took %v, want [A:1]", dropped)
	}

	publish("A", 2, ordersync.StatusPaid)
	next(2)
	if want := []string{"B:1", "A:1", "A:2"}; !slices.Equal(got, want) {
		t.Errorf("the reader returned %v, want %v: an order's later event before the one lost on the way", got, want)
	}
	if lost := testutil.ToFloat64(q.metrics.lost); lost != 1 {
		t.Errorf("lost deliveries counted %v, want 1", lost)
	}
}

// TestShortPollKeepsALateEvent: a pull of an endpoint's reader is listened
// to until the server has ended it, a second past its wait at most, so an
// event the server sent within it reaches the reader however late its
// client reads it. A link that holds the server's bytes for 1.2 s from the
// moment the one-second pull (the one made every second while events are
// held) waits on the server stands for a busy machine: the event,
// published then, arrives after that second. Listening a tenth of a second
// past the server's end, the reader missed it, and the event came back
// after its ack wait (30 s here), holding the endpoint's later events that
// long. It runs alone: the event must be published within the pull's
// second, which a loaded machine can miss.
func TestShortPollKeepsALateEvent(t *testing.T) {
	e := startEmbedded(t, t.TempDir(), -1)
	cfg := uniqueConfig()
	direct := newQueue(t, connect(t, e), cfg)
	link := startSlowLink(t, strings.TrimPrefix(e.ClientURL(), "nats://"))
	nc, err := nats.Connect("nats://"+link.addr(), nats.UserInfo(EmbeddedUser, e.password), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q := newQueue(t, nc, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src, consumer := resumedReader(ctx, t, q, direct)

	type result struct {
		ds  []ordersync.QueuedOrderEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		// One event at most: Next asks for no more after it, through the
		// slow link.
		ds, err := src.Next(ctx, 1, time.Second)
		done <- result{ds, err}
	}()
	// The event goes out once the reader's pull waits on the server.
	waitPulling(t, consumer)
	link.setDelay(1200 * time.Millisecond)
	m := ordersync.OutboxMessage{Subject: ordersync.SubjectStatusPrefix + string(ordersync.StatusPending), MsgID: "A:1",
		Payload: []byte(`{"orderCode":"A","orderStatus":"PENDING"}`)}
	if _, err := direct.PublishMessages(ctx, []ordersync.OutboxMessage{m}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Next: %v", r.err)
	}
	var got []string
	for _, d := range r.ds {
		got = append(got, d.Event().MsgID)
	}
	if !slices.Equal(got, []string{"A:1"}) {
		t.Errorf("the one-second pull returned %v, want [A:1]: the event the server sent within it was lost on the way", got)
	}
}

// TestEndpointReaderStopsDuringAPull: a reader whose context ends while its
// pull waits at the server returns at once, not when the pull would have
// ended (five seconds here), so stopping an endpoint's runner (a shutdown,
// an endpoint's change, a takeover) waits for no pull. The grace a pull is
// listened to after its end (TestShortPollKeepsALateEvent) does not apply
// to a stop.
func TestEndpointReaderStopsDuringAPull(t *testing.T) {
	e := startEmbedded(t, t.TempDir(), -1)
	q := newQueue(t, connect(t, e), uniqueConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, consumer := resumedReader(ctx, t, q, q)
	errc := make(chan error, 1)
	go func() {
		_, err := src.Next(ctx, 10, 5*time.Second)
		errc <- err
	}()
	waitPulling(t, consumer)
	stopped := time.Now()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next stopped during its pull: error %v, want context.Canceled", err)
	}
	// awaitWithdrawn may take up to withdrawBound after the stop.
	if took := time.Since(stopped); took > withdrawBound+time.Second {
		t.Errorf("Next returned %s after its reader stopped, want at once: it waited for the pull's end", took)
	}
}

// resumedReader starts reading endpoint ep1's events through q, and returns
// the reader and its consumer as seen through direct (a connection of its
// own, or q).
func resumedReader(ctx context.Context, t *testing.T, q, direct *Queue) (ordersync.OrderEventSource, jetstream.Consumer) {
	t.Helper()
	src, err := q.EndpointEvents(ctx, "ep1", ordersync.HookEvents, time.Now().Add(-time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Resume(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	consumer, err := direct.js.Consumer(ctx, q.cfg.OrdersStream, q.endpointConsumer("ep1"))
	if err != nil {
		t.Fatal(err)
	}
	return src, consumer
}
