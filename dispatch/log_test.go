package dispatch

import (
	"context"
	"io"
	"log/slog"
	"testing"
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
// linger alone.
func TestLogWriterWaitsForRequestsInFlight(t *testing.T) {
	l := &batchLog{writes: make(chan []ordersync.DeliveryRecord, 4)}
	w := newLogWriter(l, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Millisecond, 500*time.Millisecond)
	defer w.close()
	added := make(chan bool, 2)
	add := func(id string) {
		go func() { added <- w.add(context.Background(), ordersync.DeliveryRecord{WebhookID: id}) }()
	}
	w.attempting(1)
	add("first")
	// Fifty lingers: without the request in flight the first row would
	// have been written alone by now.
	select {
	case recs := <-l.writes:
		t.Fatalf("wrote %d rows while a request was in flight", len(recs))
	case <-time.After(50 * time.Millisecond):
	}
	add("second")
	if recs := <-l.writes; len(recs) != 2 {
		t.Fatalf("first write has %d rows, want both", len(recs))
	}
	w.attempting(-1)
	<-added
	<-added
	add("alone")
	if recs := <-l.writes; len(recs) != 1 || recs[0].WebhookID != "alone" {
		t.Fatalf("write with no request in flight: %+v", recs)
	}
	<-added
}
