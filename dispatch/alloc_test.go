package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv"
)

// dispatchAllocBudget is the most allocations the process may make per
// order event delivered to one endpoint: the publication to the orders
// stream, the dispatcher's pull, signing and POST, the loopback endpoint's
// side of the request, and the delivery log's row, with an embedded
// JetStream and SQLite. It sits about a ninth above the count when it was
// set (233-241), as the NATS server and client allocate beside it.
const dispatchAllocBudget = 260

// TestDispatchAllocBudget holds the delivery of order events to their
// allocation budget: a count, not a time.
func TestDispatchAllocBudget(t *testing.T) {
	logged := &countingLog{}
	e := newDispatchEnv(t, func(c *dispatch.Config) {
		logged.DeliveryLog = c.Log
		c.Log = logged
	})
	var answered atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		answered.Add(1)
	}))
	t.Cleanup(hook.Close)
	e.addEndpoint(t, hook.URL, ordersync.HookOrderStatusChanged)

	deliver := func(round, n int) {
		msgs := make([]ordersync.OutboxMessage, n)
		for i := range msgs {
			msgs[i] = orderMsg(fmt.Sprintf("A%03d%05d", round, i), ordersync.StatusPending, 1, false)
		}
		want := logged.records.Load() + int64(n)
		e.publishOrders(t, msgs...)
		testenv.WaitFor(t, time.Minute, "every delivery logged", func() bool { return logged.records.Load() >= want })
	}
	deliver(0, 50) // connections, statements and buffers made once
	const rounds, size = 4, 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for r := range rounds {
		deliver(r+1, size)
	}
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / (rounds * size)
	t.Logf("%.1f allocations per delivery (budget %d)", allocs, dispatchAllocBudget)
	if allocs > dispatchAllocBudget {
		t.Errorf("a delivery allocates %.1f times, over its budget of %d", allocs, dispatchAllocBudget)
	}
}

// countingLog is a delivery log that counts the records it wrote.
type countingLog struct {
	ordersync.DeliveryLog
	records atomic.Int64
}

func (l *countingLog) RecordDeliveries(ctx context.Context, recs []ordersync.DeliveryRecord) error {
	err := l.DeliveryLog.RecordDeliveries(ctx, recs)
	if err == nil {
		l.records.Add(int64(len(recs)))
	}
	return err
}
