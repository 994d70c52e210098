package webhook

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/batch"
)

// recordBatch is the most rows one RecordEvents call writes.
const recordBatch = 100

// asyncRecorder writes event log rows in the background: add never waits,
// a full buffer drops the row and counts it.
type asyncRecorder struct {
	rec     EventRecorder
	timeout time.Duration
	dropped prometheus.Counter
	logger  *slog.Logger

	mu     sync.RWMutex // guards closed against add racing close
	closed bool
	ch     chan ordersync.EventRecord
	done   chan struct{}
}

func startRecorder(rec EventRecorder, buffer int, timeout time.Duration, dropped prometheus.Counter, logger *slog.Logger) *asyncRecorder {
	a := &asyncRecorder{
		rec: rec, timeout: timeout, dropped: dropped, logger: logger,
		ch:   make(chan ordersync.EventRecord, buffer),
		done: make(chan struct{}),
	}
	go a.run()
	return a
}

func (a *asyncRecorder) add(r ordersync.EventRecord) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.dropped.Inc()
		return
	}
	select {
	case a.ch <- r:
	default:
		a.dropped.Inc()
	}
}

func (a *asyncRecorder) run() {
	defer close(a.done)
	batch.Drain(a.ch, recordBatch, a.write)
}

func (a *asyncRecorder) write(rows []ordersync.EventRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	if err := a.rec.RecordEvents(ctx, rows); err != nil {
		a.dropped.Add(float64(len(rows)))
		a.logger.Warn("rejected webhooks not written to the event log", "count", len(rows), "err", err)
	}
}

// close writes what is buffered and waits for the writer to finish.
func (a *asyncRecorder) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	<-a.done
}

// EventRecorder writes event log rows; the store implements it.
type EventRecorder interface {
	RecordEvents(ctx context.Context, events []ordersync.EventRecord) error
}
