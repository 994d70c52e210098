package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// countingMirror is the real store, counting how events are resolved and
// failing batch resolution when told to.
type countingMirror struct {
	DB
	one, batches atomic.Int32
	failBatches  bool
}

func (m *countingMirror) ResolveOrderCode(ctx context.Context, ref ordersync.OrderRef) (string, error) {
	m.one.Add(1)
	return m.DB.ResolveOrderCode(ctx, ref)
}

func (m *countingMirror) ResolveOrderCodes(ctx context.Context, account string, ids []ordersync.ID) (map[ordersync.ID]string, error) {
	m.batches.Add(1)
	if m.failBatches {
		return nil, errors.New("batch resolution unavailable")
	}
	return m.DB.ResolveOrderCodes(ctx, account, ids)
}

// TestPoolResolvesIDsInBatches: webhooks carrying only an order id are
// resolved a pull at a time, not one read each; an unknown id still takes
// the one-event path (and its retry schedule), and when batch resolution
// fails every event is resolved alone: the mirror ends the same.
func TestPoolResolvesIDsInBatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		failBatches bool
	}{
		{"batches", false},
		{"batch resolution failing", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPoolEnv(t, sim.Faults{})
			const n = 60
			orders := e.createOrders(t, n)
			var codes []string
			for _, o := range orders {
				codes = append(codes, o.OrderCode)
				e.publish(t, e.webhook(o.OrderID, ordersync.EventCreated))
			}
			e.publish(t, e.webhook("999999", ordersync.EventCreated)) // nobody's

			m := &countingMirror{DB: e.mirror, failBatches: tt.failBatches}
			e.startPool(t, e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.Mirror = m }), func(c *worker.PoolConfig) {
				c.Mirror = m
				c.BatchSize = 100
				c.PullWait = 50 * time.Millisecond
			})
			e.waitDrained(t, 10*time.Second)
			e.assertMirrorMatchesSim(t, codes)
			if dls := e.deadLetters(t, ordersync.ReasonUnresolved); len(dls) != 1 {
				t.Errorf("%d unresolved dead letters, want 1 (the unknown id)", len(dls))
			}

			one, batches := int(m.one.Load()), int(m.batches.Load())
			t.Logf("%d batch reads, %d single reads", batches, one)
			if batches == 0 {
				t.Fatal("no batch resolution was tried")
			}
			// The unknown id is tried once per attempt (first plus three
			// retries), alone after its batch.
			if tt.failBatches {
				if one < n {
					t.Errorf("%d events resolved alone, want every one of %d", one, n)
				}
			} else if one > 4 || batches > 4+n/10 {
				t.Errorf("%d batch reads and %d single reads for %d events, want a few batches and only the unknown id alone", batches, one, n+1)
			}
		})
	}
}
