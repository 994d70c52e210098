package worker_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// countingOutbox is the real outbox, counting the relay's reads of it.
// The messages in hidden are left out of what it reads, as a transaction
// not committed yet would leave them.
type countingOutbox struct {
	ordersync.Outbox
	reads  atomic.Int64
	hidden sync.Map // int64 ids
}

func (o *countingOutbox) PendingOutbox(ctx context.Context, limit int) ([]ordersync.OutboxMessage, error) {
	o.reads.Add(1)
	msgs, err := o.Outbox.PendingOutbox(ctx, limit)
	return slices.DeleteFunc(msgs, func(m ordersync.OutboxMessage) bool { _, ok := o.hidden.Load(m.ID); return ok }), err
}

// usePostgres moves the env's mirror to a fresh PostgreSQL database; the
// env's cleanup closes it in place of the SQLite one.
func (e *env) usePostgres(t *testing.T) {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: testdb.Services(t).DatabaseURL})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	e.db.Close()
	e.db, e.mirror = db, db
}

// forDialects runs f on a SQLite mirror and on a PostgreSQL one, in
// parallel with each other and with the package's other parallel tests.
func forDialects(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sim.Faults{})
			if dialect == "postgres" {
				e.usePostgres(t)
			}
			f(t, e)
		})
	}
}

// orderHeaders reads the orders stream's messages in order: each one's
// message id and whether it carries the order's facts as headers.
func (e *env) orderHeaders(t *testing.T) (ids []string, withFacts []bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, e.queueCfg.OrdersStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
		withFacts = append(withFacts, m.Header.Get(queue.HeaderStatusChangeAt) != "" && m.Header.Get(queue.HeaderAccount) != "")
	}
	return ids, withFacts
}

// relayRun is a relay over a counting outbox, and what makes the messages
// it publishes: an order of the simulator's synced into the mirror.
type relayRun struct {
	orders []ordersync.PaymentLinkResult
	relay  *worker.Relay
	outbox *countingOutbox
	sync   func(i int) []ordersync.OutboxMessage
	flush  func(want int)
}

// newRelayRun makes n orders in the simulator and a relay that reads the
// table back every interval while offers keep coming.
func newRelayRun(t *testing.T, e *env, n int, interval time.Duration) relayRun {
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	outbox := &countingOutbox{Outbox: e.db}
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: outbox, Publisher: e.q, Interval: interval, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	orders := e.createOrders(t, n)
	return relayRun{orders: orders, relay: relay, outbox: outbox,
		sync: func(i int) []ordersync.OutboxMessage {
			t.Helper()
			r, err := s.SyncOrder(ctx, ordersync.DefaultAccount, orders[i].OrderCode, ordersync.CauseTrack)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Messages) != 1 || r.Messages[0].ID == 0 {
				t.Fatalf("order %d: apply reported messages %+v, want one with its id", i, r.Messages)
			}
			return r.Messages
		},
		flush: func(want int) {
			t.Helper()
			if n, err := relay.Flush(ctx); err != nil || n != want {
				t.Fatalf("Flush sent %d, %v; want %d", n, err, want)
			}
		},
	}
}

// TestRelayPublishesOfferedMessages: with ids in commit order (SQLite's
// one writer, PostgreSQL's outbox lock), the messages a commit hands the
// relay are published without reading the table back, once a first read
// found where the table stands; a message missing between those offered
// (another writer's) sends the relay to the table, which gives everything
// in order. Messages published from memory carry the order's facts as
// headers; those read back, written by a commit that handed nothing over
// (as by an earlier release), do not. The timed read is an hour away.
func TestRelayPublishesOfferedMessages(t *testing.T) {
	forDialects(t, testRelayPublishesOfferedMessages)
}

func testRelayPublishesOfferedMessages(t *testing.T, e *env) {
	ctx := context.Background()
	r := newRelayRun(t, e, 5, time.Hour)
	relay, outbox, sync, flush := r.relay, r.outbox, r.sync, r.flush

	sync(0) // written as by an earlier release: nothing offered
	flush(1)
	if got := outbox.reads.Load(); got != 1 {
		t.Fatalf("the first round read the table %d times, want 1", got)
	}
	relay.Offer(sync(1))
	flush(1)
	relay.Offer(sync(2))
	flush(1)
	if got := outbox.reads.Load(); got != 1 {
		t.Errorf("offered messages that continue the last one: the table was read %d times in all, want only the first", got)
	}

	// Another writer's message (not offered) comes between: the relay
	// reads the table and publishes both, in order.
	sync(3)
	relay.Offer(sync(4))
	flush(2)
	if got := outbox.reads.Load(); got < 2 {
		t.Errorf("a message missing among those offered: the table was read %d times, want a second read", got)
	}
	if pending, _ := e.db.PendingOutbox(ctx, 100); len(pending) != 0 {
		t.Fatalf("%d outbox messages pending, want none", len(pending))
	}

	ids, withFacts := e.orderHeaders(t)
	if len(ids) != 5 {
		t.Fatalf("%d order events in the stream, want 5: %v", len(ids), ids)
	}
	for i, o := range r.orders {
		if want := ordersync.DefaultAccount + ":" + o.OrderCode + ":status:PENDING:1"; ids[i] != want {
			t.Errorf("event %d is %s, want %s", i, ids[i], want)
		}
		// Orders 1, 2 and 4 were published from memory; 0 and 3 from the
		// table, which keeps no offset.
		if want := i == 1 || i == 2 || i == 4; withFacts[i] != want {
			t.Errorf("event %d carries the order's facts as headers: %v, want %v", i, withFacts[i], want)
		}
	}
}

// TestRelayFindsAMessageCommittedBelowTheLast: a message that commits
// below the last one published (on PostgreSQL, by a writer of a release
// without the outbox lock, in a rolling upgrade) is read from the table
// within the relay's interval, though every later message continues the
// last one from memory. With an interval of a nanosecond every round is
// due to read; with an hour's (TestRelayPublishesOfferedMessages) none
// is, and this message would wait until offers stop.
func TestRelayFindsAMessageCommittedBelowTheLast(t *testing.T) {
	forDialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		r := newRelayRun(t, e, 4, time.Nanosecond)
		r.sync(0)
		r.flush(1)
		late := r.sync(1)[0] // not committed yet, as far as reads go
		r.outbox.hidden.Store(late.ID, true)
		r.relay.Offer(r.sync(2))
		r.flush(1)
		r.outbox.hidden.Delete(late.ID) // commits
		r.relay.Offer(r.sync(3))
		r.flush(2)
		if pending, _ := e.db.PendingOutbox(ctx, 100); len(pending) != 0 {
			t.Fatalf("%d outbox messages pending, want none: %+v", len(pending), pending)
		}
		if ids, _ := e.orderHeaders(t); len(ids) != 4 {
			t.Fatalf("%d order events in the stream, want 4: %v", len(ids), ids)
		}
	})
}

// TestRelayFindsItAtTheDefaultInterval: at the default interval too, the
// message committed below the last one published goes out while offers
// keep coming, one every 25 ms; without the timed read it would wait
// for them to stop. The deadline is against a relay that never reads.
func TestRelayFindsItAtTheDefaultInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	ctx := context.Background()
	const offers = 160 // 4 s of offers, 16 default intervals
	r := newRelayRun(t, e, offers+3, 0)
	r.sync(0)
	r.flush(1)
	late := r.sync(1)[0]
	r.outbox.hidden.Store(late.ID, true)
	r.relay.Offer(r.sync(2))
	r.flush(1)
	r.outbox.hidden.Delete(late.ID)
	start := time.Now()
	for i := 3; ; i++ {
		if i == offers+3 {
			t.Fatalf("the late message still pending after %d offers over %v", offers, time.Since(start).Round(time.Millisecond))
		}
		r.relay.Offer(r.sync(i))
		if _, err := r.relay.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if pending, _ := e.db.PendingOutbox(ctx, 100); len(pending) == 0 {
			t.Logf("the late message went out %v after it committed, with %d offers between", time.Since(start).Round(time.Millisecond), i-2)
			return
		}
		time.Sleep(25 * time.Millisecond) // paces the offers; the relay's own interval is the subject
	}
}
