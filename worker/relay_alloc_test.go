package worker_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// relayAllocBudget is the most allocations the relay may cost per message
// it publishes from memory (Offer, then Flush) on SQLite, with a real order
// as payload and an embedded JetStream: about a seventh above the count
// when it was set, as the NATS client's reader allocates beside it, while
// reading the messages back from the table (a third more) fails it.
const relayAllocBudget = 58

// TestRelayAllocBudget holds the relay to its allocation budget, from
// memory and, for the figure beside it, reading the table back.
func TestRelayAllocBudget(t *testing.T) {
	fromMemory := relayAllocs(t, true)
	fromTable := relayAllocs(t, false)
	t.Logf("%.1f allocations per message from memory, %.1f read back from the table (budget %d)", fromMemory, fromTable, relayAllocBudget)
	if fromMemory > relayAllocBudget {
		t.Errorf("the relay allocates %.1f times per message from memory, over its budget of %d", fromMemory, relayAllocBudget)
	}
}

// relayAllocs applies 400 new orders in batches of 20, handing each
// batch's messages to the relay (when offer) and flushing it, and returns
// the allocations of the relay's rounds per message. The relay's timed
// read is an hour away, so only what is offered decides a read.
func relayAllocs(t *testing.T, offer bool) float64 {
	t.Helper()
	e := newEnv(t, sim.Faults{})
	ctx := context.Background()
	created := e.createOrders(t, 1)
	order, err := e.client.GetOrder(ctx, created[0].OrderCode)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: e.db, Publisher: e.q, Interval: time.Hour, Registerer: prometheus.NewRegistry(), Logger: e.logger})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Flush(ctx); err != nil { // the read at start
		t.Fatal(err)
	}
	const batches, size = 20, 20
	var allocs uint64
	var before, after runtime.MemStats
	for b := range batches {
		params := make([]ordersync.ApplyParams, size)
		for i := range params {
			n := b*size + i
			o := *order
			o.OrderCode, o.OrderID = fmt.Sprintf("alloc%07d", n), ordersync.ID(fmt.Sprint(800000+n))
			params[i] = ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: &o, Seq: int64(n + 1), FetchedAt: time.Now(), Cause: ordersync.CauseWebhook}
		}
		results, err := e.db.ApplyOrders(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []ordersync.OutboxMessage
		for _, r := range results {
			msgs = append(msgs, r.Messages...)
		}
		runtime.ReadMemStats(&before)
		if offer {
			relay.Offer(msgs)
		}
		sent, err := relay.Flush(ctx)
		runtime.ReadMemStats(&after)
		if err != nil || sent != len(msgs) {
			t.Fatalf("Flush sent %d, %v; want %d", sent, err, len(msgs))
		}
		allocs += after.Mallocs - before.Mallocs
	}
	return float64(allocs) / (batches * size)
}
