package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// crashingOutbox is the real outbox, except that MarkOutboxSent fails while
// crash is set: the relay published and then "died" before it could mark
// the messages sent.
type crashingOutbox struct {
	ordersync.Outbox
	crash atomic.Bool
}

var errCrash = errors.New("process died before marking the outbox")

func (o *crashingOutbox) MarkOutboxSent(ctx context.Context, ids []int64, at time.Time) error {
	if o.crash.Load() {
		return errCrash
	}
	return o.Outbox.MarkOutboxSent(ctx, ids, at)
}

// paidMessages reads every message on the PAID subject of the test's orders
// stream, as a fulfilment consumer would, and counts them per order.
func (e *env) paidMessages(t *testing.T) map[string]int {
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
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{e.queueCfg.SubjectPrefix + ".orders.paid"}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for remaining := int(info.NumPending); remaining > 0; {
		batch, err := cons.Fetch(remaining, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for msg := range batch.Messages() {
			var o struct {
				OrderCode   string `json:"orderCode"`
				OrderStatus string `json:"orderStatus"`
			}
			if err := json.Unmarshal(msg.Data(), &o); err != nil {
				t.Fatalf("PAID payload is not the order JSON: %v", err)
			}
			out[o.OrderCode]++
			got++
		}
		if got == 0 {
			t.Fatalf("PAID messages: %d pending but none delivered (%v)", remaining, batch.Error())
		}
		remaining -= got
	}
	return out
}

// TestRelayExactlyOnceAcrossCrash: orders are paid and finalized; the relay
// publishes their outbox messages and dies before marking them sent; a new
// relay publishes them all again. JetStream drops the re-publish as a
// duplicate, so a consumer of ordersync.orders.paid sees each paid order
// once, and the outbox ends empty.
func TestRelayExactlyOnceAcrossCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	orders := e.createOrders(t, 6)
	for i, o := range orders {
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			continue // stays PENDING: no PAID trigger
		}
		if _, err := e.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseWebhook); err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			// FINALIZED after PAID was seen: no second trigger.
			if _, err := e.sim.Finalize(o.OrderCode); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseWebhook); err != nil {
				t.Fatal(err)
			}
		}
	}

	outbox := &crashingOutbox{Outbox: e.db}
	outbox.crash.Store(true)
	first, err := worker.NewRelay(worker.RelayConfig{Outbox: outbox, Publisher: e.q, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Flush(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("first relay: want the crash, got %v", err)
	}
	pending, err := e.db.PendingOutbox(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// 6 created (PENDING) + 4 PAID status + 4 paid triggers + 2 FINALIZED.
	if len(pending) != 16 {
		t.Fatalf("after the crash %d outbox messages are pending, want all 16", len(pending))
	}

	outbox.crash.Store(false)
	reg := prometheus.NewRegistry()
	second, err := worker.NewRelay(worker.RelayConfig{Outbox: outbox, Publisher: e.q, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	n, err := second.Flush(ctx)
	if err != nil || n != 16 {
		t.Fatalf("second relay sent %d, err %v; want 16", n, err)
	}
	if dup := outboxPublished(t, reg, "paid", "true"); dup != 4 {
		t.Errorf("JetStream reported %v duplicate PAID publishes, want 4", dup)
	}
	if pending, _ := e.db.PendingOutbox(ctx, 1000); len(pending) != 0 {
		t.Fatalf("%d outbox messages still pending", len(pending))
	}

	got := e.paidMessages(t)
	for i, o := range orders {
		want := 1
		if i%3 == 2 {
			want = 0
		}
		if got[o.OrderCode] != want {
			t.Errorf("order %s: %d PAID messages, want %d", o.OrderCode, got[o.OrderCode], want)
		}
	}
}

// TestRelayRetriesWhenQueueIsDown: a failed publish leaves the message
// pending and Run keeps trying until it goes through.
func TestRelayRetriesWhenQueueIsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	o := e.createOrders(t, 1)[0]
	if _, err := e.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
		t.Fatal(err)
	}
	down := &flakyPublisher{MessagePublisher: e.q}
	down.failures.Store(3)
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: e.db, Publisher: down, Interval: 10 * time.Millisecond, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(runCtx) }()
	testenv.Await(t, 10*time.Second, 10*time.Millisecond, func() error {
		pending, err := e.db.PendingOutbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) > 0 {
			return fmt.Errorf("%d messages still pending after the queue came back", len(pending))
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if down.failures.Load() > 0 {
		t.Fatal("the relay never hit the failing publisher")
	}
	if got := e.paidMessages(t)[o.OrderCode]; got != 1 {
		t.Fatalf("%d PAID messages, want 1", got)
	}
}

// TestRelayRetriesAPublishNeverAnswered: a queue whose store failed a
// write answers no publish; the relay gives each round PublishTimeout and
// tries again, and the message is published once the queue answers.
func TestRelayRetriesAPublishNeverAnswered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	o := e.createOrders(t, 1)[0]
	if _, err := e.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
		t.Fatal(err)
	}
	silent := &silentPublisher{MessagePublisher: e.q}
	silent.silences.Store(1)
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: e.db, Publisher: silent, Interval: 10 * time.Millisecond,
		PublishTimeout: 100 * time.Millisecond, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { _, err := relay.Flush(ctx); flushed <- err }()
	select {
	case err := <-flushed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush against a silent queue = %v, want its PublishTimeout's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Flush still waiting for an ack 10s into a 100ms PublishTimeout")
	}
	// Once the queue answers, a round sends the message. On a busy machine
	// a real ack can outlast the 100 ms PublishTimeout; that round fails
	// too and the next one tries again, as Run's do.
	testenv.Await(t, 10*time.Second, 0, func() error {
		n, err := relay.Flush(ctx)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush once the queue answers = %d, %v; want the messages sent or a round timed out", n, err)
		}
		if err == nil && n == 0 {
			t.Fatal("Flush once the queue answers sent nothing, without an error")
		}
		return err
	})
	if got := e.paidMessages(t)[o.OrderCode]; got != 1 {
		t.Fatalf("%d PAID messages, want 1", got)
	}
}

// silentPublisher answers nothing to its first silences calls until their
// context ends, like a JetStream stream whose store failed a write.
type silentPublisher struct {
	ordersync.MessagePublisher
	silences atomic.Int64
}

func (p *silentPublisher) PublishMessages(ctx context.Context, msgs []ordersync.OutboxMessage) ([]bool, error) {
	if p.silences.Add(-1) >= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return p.MessagePublisher.PublishMessages(ctx, msgs)
}

// flakyPublisher fails its first failures calls, like a queue that is down.
type flakyPublisher struct {
	ordersync.MessagePublisher
	failures atomic.Int64
}

func (p *flakyPublisher) PublishMessages(ctx context.Context, msgs []ordersync.OutboxMessage) ([]bool, error) {
	if p.failures.Add(-1) >= 0 {
		return nil, errors.New("nats: no responders available")
	}
	return p.MessagePublisher.PublishMessages(ctx, msgs)
}

// lostAckPublisher publishes every message of its first call but reports
// only the first acked of them, then a timeout: the ack of the next one was
// lost, and the ones after it were stored all the same.
type lostAckPublisher struct {
	ordersync.MessagePublisher
	acked int
	calls atomic.Int64
}

func (p *lostAckPublisher) PublishMessages(ctx context.Context, msgs []ordersync.OutboxMessage) ([]bool, error) {
	dups, err := p.MessagePublisher.PublishMessages(ctx, msgs)
	if p.calls.Add(1) > 1 || err != nil || len(dups) <= p.acked {
		return dups, err
	}
	return dups[:p.acked], fmt.Errorf("publish %s: %w", msgs[p.acked].MsgID, context.DeadlineExceeded)
}

// TestRelayLostAckInABatch: the relay publishes a batch, and the ack of a
// message in the middle is lost while the ones after it were stored. Only
// the messages before it are marked sent; the next round publishes the rest
// again, which JetStream drops as duplicates, so each paid order still
// reaches a PAID consumer once and the outbox ends empty.
func TestRelayLostAckInABatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	ctx := context.Background()
	orders := e.createOrders(t, 4)
	for _, o := range orders {
		if _, err := e.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SyncOrder(ctx, ordersync.DefaultAccount, o.OrderCode, ordersync.CauseTrack); err != nil {
			t.Fatal(err)
		}
	}
	all, err := e.db.PendingOutbox(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Per order: its status message (first seen PAID) and its PAID trigger.
	if len(all) != 8 {
		t.Fatalf("%d outbox messages pending, want 8", len(all))
	}

	pub := &lostAckPublisher{MessagePublisher: e.q, acked: 3}
	reg := prometheus.NewRegistry()
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: e.db, Publisher: pub, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := relay.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) || n != 3 {
		t.Fatalf("first flush: sent %d, err %v; want 3 and the lost ack", n, err)
	}
	pending, err := e.db.PendingOutbox(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, m := range pending {
		ids = append(ids, m.ID)
	}
	var want []int64
	for _, m := range all[3:] {
		want = append(want, m.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("pending after the lost ack: %v, want the messages from the fourth on, %v", ids, want)
	}

	if n, err := relay.Flush(ctx); err != nil || n != 5 {
		t.Fatalf("second flush: sent %d, err %v; want the other 5", n, err)
	}
	if dup := outboxPublished(t, reg, "paid", "true") + outboxPublished(t, reg, "status", "true"); dup != 5 {
		t.Errorf("JetStream reported %v duplicates on the second flush, want 5", dup)
	}
	if pending, _ := e.db.PendingOutbox(ctx, 1000); len(pending) != 0 {
		t.Fatalf("%d outbox messages still pending", len(pending))
	}
	got := e.paidMessages(t)
	for _, o := range orders {
		if got[o.OrderCode] != 1 {
			t.Errorf("order %s: %d PAID messages, want 1", o.OrderCode, got[o.OrderCode])
		}
	}
}

// outboxPublished reads ordersync_outbox_published_total{kind,duplicate}.
func outboxPublished(t *testing.T, g prometheus.Gatherer, kind, duplicate string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ordersync_outbox_published_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["kind"] == kind && labels["duplicate"] == duplicate {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
