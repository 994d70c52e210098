package fake_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/queue"
)

// eventQueue is what the pool reads and the receiver writes.
type eventQueue interface {
	ordersync.EventPublisher
	ordersync.EventSource
}

// TestQueueContract holds fake.Queue to what the queue package does on an
// embedded JetStream: the same cases, the same answers.
func TestQueueContract(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) eventQueue
	}{
		{"fake", func(*testing.T) eventQueue { return fake.NewQueue() }},
		{"jetstream", openJetStream},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Run("PublishThenNext", func(t *testing.T) { queuePublishThenNext(t, c.open(t)) })
			t.Run("Duplicate", func(t *testing.T) { queueDuplicate(t, c.open(t)) })
			t.Run("RetryThenSettle", func(t *testing.T) { queueRetryThenSettle(t, c.open(t)) })
		})
	}
}

func openJetStream(t *testing.T) eventQueue {
	t.Helper()
	emb, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(emb.Shutdown)
	nc, err := emb.Connect(t.Name())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	b := make([]byte, 5)
	rand.Read(b)
	id := hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := queue.New(ctx, nc, queue.Config{SubjectPrefix: "t" + id, EventsStream: "T" + id + "_EVENTS",
		OrdersStream: "T" + id + "_ORDERS", Consumer: "worker", AckWait: 10 * time.Second})
	if err != nil {
		t.Fatalf("queue.New: %v", err)
	}
	return struct {
		*queue.Queue
		ordersync.EventSource
	}{q, q.Events()}
}

func event(id string) *ordersync.InboundEvent {
	return &ordersync.InboundEvent{MsgID: id, Account: ordersync.DefaultAccount, Body: []byte(`{"orderId":"` + id + `"}`),
		ReceivedAt: time.Date(2026, 11, 5, 12, 0, 0, 123456789, time.UTC), Signature: ordersync.SignatureValid, Cause: ordersync.CauseWebhook}
}

// next takes what Next returns within a generous wait; the long poll
// returns as soon as an event is there.
func next(t *testing.T, q eventQueue, max int) []ordersync.QueuedEvent {
	t.Helper()
	ds, err := q.Next(context.Background(), max, 10*time.Second)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ds
}

// queuePublishThenNext: events come out in the order published with every
// fact the receiver put in them, at their first attempt; Pending counts
// those not handed out.
func queuePublishThenNext(t *testing.T, q eventQueue) {
	ctx := context.Background()
	if _, err := q.PublishEvent(ctx, &ordersync.InboundEvent{Account: ordersync.DefaultAccount, Body: []byte(`{}`)}); err == nil {
		t.Error("an event without a MsgID was published")
	}
	first, second := event("e1"), event("e2")
	second.Ignored, second.ReplayOf, second.Cause, second.Signature = ordersync.IgnoreSubscription, 42, ordersync.CauseReplay, ordersync.SignatureMissing
	for _, ev := range []*ordersync.InboundEvent{first, second} {
		if dup, err := q.PublishEvent(ctx, ev); err != nil || dup {
			t.Fatalf("PublishEvent(%s) = %v, %v", ev.MsgID, dup, err)
		}
	}
	// JetStream's consumer learns of stored messages a moment after the
	// publish's ack, so the count is awaited, not read once.
	var n uint64
	testenv.WaitFor(t, 5*time.Second, "Pending to count both events", func() bool {
		var err error
		if n, err = q.Pending(ctx); err != nil {
			t.Fatalf("Pending: %v", err)
		}
		return n == 2
	})
	var got []ordersync.QueuedEvent
	for len(got) < 2 {
		got = append(got, next(t, q, 2-len(got))...)
	}
	for i, want := range []*ordersync.InboundEvent{first, second} {
		ev := got[i].Event()
		if ev.MsgID != want.MsgID || ev.Account != want.Account || string(ev.Body) != string(want.Body) || !ev.ReceivedAt.Equal(want.ReceivedAt) ||
			ev.Signature != want.Signature || ev.Ignored != want.Ignored || ev.ReplayOf != want.ReplayOf || ev.Cause != want.Cause {
			t.Errorf("event %d = %+v, want %+v", i, ev, want)
		}
		if a := got[i].Attempt(); a != 1 {
			t.Errorf("event %d at attempt %d, want 1", i, a)
		}
		if err := got[i].Ack(ctx); err != nil {
			t.Errorf("Ack: %v", err)
		}
	}
	if n, err := q.Pending(ctx); err != nil || n != 0 {
		t.Errorf("Pending after both were handed out = %d, %v; want 0", n, err)
	}
}

// queueDuplicate: an event whose MsgID was stored is reported a duplicate
// and handed out once.
func queueDuplicate(t *testing.T, q eventQueue) {
	ctx := context.Background()
	if _, err := q.PublishEvent(ctx, event("d1")); err != nil {
		t.Fatal(err)
	}
	if dup, err := q.PublishEvent(ctx, event("d1")); err != nil || !dup {
		t.Errorf("the same MsgID again: duplicate %v, %v; want true", dup, err)
	}
	if _, err := q.PublishEvent(ctx, event("d2")); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for len(ids) < 2 {
		for _, d := range next(t, q, 10) {
			ids = append(ids, d.Event().MsgID)
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ids[0] != "d1" || ids[1] != "d2" {
		t.Errorf("handed out %v, want [d1 d2]", ids)
	}
}

// queueRetryThenSettle: a retried event comes back after its delay at the
// next attempt; a terminated one and an acked one never come back, which
// the queue's own long poll shows by returning nothing within its wait.
func queueRetryThenSettle(t *testing.T, q eventQueue) {
	ctx := context.Background()
	if _, err := q.PublishEvent(ctx, event("r1")); err != nil {
		t.Fatal(err)
	}
	d := next(t, q, 1)[0]
	if err := d.Extend(); err != nil {
		t.Errorf("Extend: %v", err)
	}
	if err := d.Retry(50 * time.Millisecond); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	again := next(t, q, 1)
	if len(again) != 1 || again[0].Event().MsgID != "r1" || again[0].Attempt() != 2 {
		t.Fatalf("after Retry: %d events, want r1 at attempt 2", len(again))
	}
	if err := again[0].Term(); err != nil {
		t.Fatalf("Term: %v", err)
	}
	if _, err := q.PublishEvent(ctx, event("r2")); err != nil {
		t.Fatal(err)
	}
	d = next(t, q, 1)[0]
	if d.Event().MsgID != "r2" {
		t.Fatalf("handed out %s, want r2", d.Event().MsgID)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if ds, err := q.Next(ctx, 10, 300*time.Millisecond); err != nil || len(ds) != 0 {
		t.Errorf("after Term and Ack: %d events, %v; want none", len(ds), err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := q.Next(cctx, 1, time.Second); err == nil {
		t.Error("Next with an ended context returned no error")
	}
}
