package dispatch

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/batch"
	"github.com/ordersync/ordersync/internal/quietlog"
)

// logBatch is the most delivery log rows one write takes.
const logBatch = 200

// logLinger is how long a write waits for more rows after the first: the
// lanes wait for their rows, so it delays their acks by that much, and
// rows settled at a steady pace share a commit instead of one each.
const logLinger = 2 * time.Millisecond

// logMaxLinger is how long after the first row a write keeps waiting while
// requests are in flight, whose rows are on their way: in a burst a commit
// then takes the rows of a few milliseconds of deliveries, not of two,
// and a lone delivery still waits only logLinger.
const logMaxLinger = 10 * time.Millisecond

// logWriteTimeout bounds one write of the delivery log: lanes wait for it.
const logWriteTimeout = 10 * time.Second

// logWriter writes the delivery log in batches: what the lanes settled
// while the last write ran, or within logLinger of the first row, goes in
// one transaction, so an endpoint costs a write per batch, not one per
// delivery.
type logWriter struct {
	log    ordersync.DeliveryLog
	logger *slog.Logger
	// quiet logs failed writes, which repeat per batch through an outage,
	// once and then summed up.
	quiet *quietlog.Log
	ch    chan logEntry
	done  chan struct{}
	// attempts counts the requests in flight (attempting).
	attempts atomic.Int64
}

type logEntry struct {
	rec     ordersync.DeliveryRecord
	written chan struct{}
}

func startLogWriter(log ordersync.DeliveryLog, logger *slog.Logger) *logWriter {
	return newLogWriter(log, logger, logLinger, logMaxLinger)
}

// newLogWriter starts a writer whose writes wait linger for more rows, and
// up to maxLinger while requests are in flight.
func newLogWriter(log ordersync.DeliveryLog, logger *slog.Logger, linger, maxLinger time.Duration) *logWriter {
	w := &logWriter{log: log, logger: logger, quiet: quietlog.New(logger, quietlog.DefaultInterval), ch: make(chan logEntry, logBatch), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		timer := time.NewTimer(linger)
		defer timer.Stop()
		batch.Drain(w.ch, logBatch, func(entries []logEntry) {
			first := time.Now()
			timer.Reset(linger)
		gather:
			for len(entries) < logBatch {
				select {
				case e, ok := <-w.ch:
					if !ok {
						break gather
					}
					entries = append(entries, e)
				case <-timer.C:
					rest := maxLinger - time.Since(first)
					if w.attempts.Load() == 0 || rest <= 0 {
						break gather
					}
					timer.Reset(min(rest, linger))
				}
			}
			timer.Stop()
			w.write(entries)
		})
	}()
	return w
}

// attempting counts a request in flight while it is (+1 before, -1 after):
// a write in progress waits for its row.
func (w *logWriter) attempting(n int64) { w.attempts.Add(n) }

// add records how a delivery ended and waits for the write, so that the
// event is settled only after its row is in: a process killed in between
// leaves it to be delivered and recorded again. It reports false only when
// ctx ends first. A failed write is logged here and does not hold the
// delivery back: the endpoint has its answer either way.
func (w *logWriter) add(ctx context.Context, rec ordersync.DeliveryRecord) bool {
	if rec.At.IsZero() {
		rec.At = time.Now()
	}
	e := logEntry{rec: rec, written: make(chan struct{})}
	select {
	case w.ch <- e:
	case <-ctx.Done():
		return false
	}
	select {
	case <-e.written:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *logWriter) write(entries []logEntry) {
	recs := make([]ordersync.DeliveryRecord, len(entries))
	for i, e := range entries {
		recs[i] = e.rec
	}
	ctx, cancel := context.WithTimeout(context.Background(), logWriteTimeout)
	defer cancel()
	if err := w.log.RecordDeliveries(ctx, recs); err != nil {
		w.quiet.Log(slog.LevelError, "write", "deliveries: write the delivery log", "rows", len(recs), "err", err)
	}
	for _, e := range entries {
		close(e.written)
	}
}

// close writes what is queued and waits for the writer. Nothing may add
// after it.
func (w *logWriter) close() {
	close(w.ch)
	<-w.done
	w.quiet.Close()
}
