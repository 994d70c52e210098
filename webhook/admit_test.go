package webhook

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/ordersync/ordersync"
)

// countingPublisher counts the publishes it passes on.
type countingPublisher struct {
	ordersync.EventPublisher
	n atomic.Int64
}

func (p *countingPublisher) PublishEvent(ctx context.Context, ev *ordersync.InboundEvent) (bool, error) {
	p.n.Add(1)
	return p.EventPublisher.PublishEvent(ctx, ev)
}

// TestAdmitRefusesBeforePublishing: while Admit says no (the disk below its
// watermark), a signed webhook is answered 503 with Retry-After and nothing
// is published; once it says yes, the same webhook is accepted.
func TestAdmitRefusesBeforePublishing(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	pub := &countingPublisher{EventPublisher: tq.q}
	var low atomic.Bool
	low.Store(true)
	_, url := startReceiver(t, Config{
		Secrets:   []string{oldSecret},
		Publisher: pub,
		Admit: func() error {
			if low.Load() {
				return errors.New("data directory low on disk space")
			}
			return nil
		},
	})
	created := fixture(t, "webhook-created-captured-shape.json")
	for range 3 {
		res := post(t, "POST", url+Path, created, Sign(oldSecret, created))
		if res.status != 503 || res.retryAfter == "" || res.body != "unavailable" {
			t.Fatalf("below the watermark: answer %+v, want 503 unavailable with Retry-After", res)
		}
	}
	if n := pub.n.Load(); n != 0 {
		t.Fatalf("%d publishes while refusing, want none", n)
	}
	low.Store(false)
	if res := post(t, "POST", url+Path, created, Sign(oldSecret, created)); res.status != 200 || res.body != "accepted" {
		t.Fatalf("above the watermark again: answer %+v, want 200 accepted", res)
	}
	tq.consume(t, 1)
}
