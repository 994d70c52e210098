package dispatch

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ordersync/ordersync"
)

// batchLog is a delivery log that hands each write's rows to a channel.
type batchLog struct {
	ordersync.DeliveryLog
	writes chan []ordersync.DeliveryRecord
}

func (l *batchLog) RecordDeliveries(_ context.Context, recs []ordersync.DeliveryRecord) error {
	l.writes <- recs
	return nil
}

// TestLogWriterWaitsForRequestsInFlight: past its linger a write keeps
// waiting while a request is in flight, up to its longest wait, and takes
// the rows that come meanwhile; with none in flight it goes after the
// linger alone. The writer's timers run on the bubble's clock, so each
// write's time is exact and "not written yet" is synctest.Wait.
func TestLogWriterWaitsForRequestsInFlight(t *testing.T) {
	const linger, maxLinger = time.Millisecond, 500 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		l := &batchLog{writes: make(chan []ordersync.DeliveryRecord, 4)}
		w := newLogWriter(l, slog.New(slog.NewTextHandler(io.Discard, nil)), linger, maxLinger)
		defer w.close()
		added := make(chan bool, 2)
		add := func(id string) {
			go func() { added <- w.add(context.Background(), ordersync.DeliveryRecord{WebhookID: id}) }()
		}
		start := time.Now()
		w.attempting(1)
		add("first")
		// Just short of the longest wait, many lingers past the first row:
		// without the request in flight it would have been written alone.
		time.Sleep(maxLinger - linger) // the bubble's clock; the writer's timers are the subject
		synctest.Wait()
		select {
		case recs := <-l.writes:
			t.Fatalf("wrote %d rows while a request was in flight", len(recs))
		default:
		}
		add("second")
		if recs := <-l.writes; len(recs) != 2 {
			t.Fatalf("first write has %d rows, want both", len(recs))
		}
		if took := time.Since(start); took != maxLinger {
			t.Errorf("first write after %v, want the longest wait %v", took, maxLinger)
		}
		w.attempting(-1)
		<-added
		<-added
		start = time.Now()
		add("alone")
		if recs := <-l.writes; len(recs) != 1 || recs[0].WebhookID != "alone" {
			t.Fatalf("write with no request in flight: %+v", recs)
		}
		if took := time.Since(start); took != linger {
			t.Errorf("write with no request in flight after %v, want the linger %v", took, linger)
		}
		<-added
	})
}
