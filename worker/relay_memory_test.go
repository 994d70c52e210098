package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// countingOutbox is the real outbox, counting the relay's reads of it.
type countingOutbox struct {
	ordersync.Outbox
	reads atomic.Int64
}

func (o *countingOutbox) PendingOutbox(ctx context.Context, limit int) ([]ordersync.OutboxMessage, error) {
	o.reads.Add(1)
	return o.Outbox.PendingOutbox(ctx, limit)
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

// TestRelayPublishesOfferedMessages: with ids in commit order (SQLite),
// the messages a commit hands the relay are published without reading the
// table back, once a first read found where the table stands; a message
// missing between those offered (another writer's) sends the relay to the
// table, which gives everything in order. Messages published from memory
// carry the order's facts as headers; those read back, written by a
// commit that handed nothing over (as by an earlier release), do not.
func TestRelayPublishesOfferedMessages(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	outbox := &countingOutbox{Outbox: e.db}
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: outbox, Publisher: e.q, CommitOrderIDs: true, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	orders := e.createOrders(t, 5)
	sync := func(i int) []ordersync.OutboxMessage {
		t.Helper()
		r, err := s.SyncOrder(ctx, ordersync.DefaultAccount, orders[i].OrderCode, ordersync.CauseTrack)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) != 1 || r.Messages[0].ID == 0 {
			t.Fatalf("order %d: apply reported messages %+v, want one with its id", i, r.Messages)
		}
		return r.Messages
	}
	flush := func(want int) {
		t.Helper()
		if n, err := relay.Flush(ctx); err != nil || n != want {
			t.Fatalf("Flush sent %d, %v; want %d", n, err, want)
		}
	}

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
	for i, o := range orders {
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
