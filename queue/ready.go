package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// probeTimeout bounds Ready's probe write: a store that refuses writes
// does not answer, and a load balancer's probe should not wait for it.
const probeTimeout = time.Second

// DefaultProbeEvery is Config.ProbeEvery's default: /readyz answers
// anyone, so a flood of it costs one probe write a second, not one each.
const DefaultProbeEvery = time.Second

// probeBody is the probe's payload: two pages, so that its write needs new
// room on the disk as a webhook's does (a few bytes fit in the page the
// last write left half full, even on a full disk).
var probeBody = make([]byte, 8<<10)

// Ready reports whether a webhook can be made durable now, for /readyz: the
// connection is up, the events stream answers, and a write to the same
// store is acknowledged. Stream info alone is answered from memory by a
// server whose disk is full. The probe is a small publish to a stream of
// its own that keeps one message, so it costs a write of 8 KiB and
// no worker ever sees it; a server that cannot store it (disk full, no
// quorum, JetStream down) cannot store a webhook either. A probe rather
// than the last publish's outcome: a process the load balancer stopped
// sending to would otherwise never see a success that makes it ready again.
// A probe write's outcome answers for cfg.ProbeEvery; the connection and
// the stream, answered from memory, are asked on every call.
func (q *Queue) Ready(ctx context.Context) error {
	if st := q.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("queue not ready: NATS connection %s", st)
	}
	if _, err := q.js.Stream(ctx, q.cfg.EventsStream); err != nil {
		return fmt.Errorf("queue not ready: stream %s: %w", q.cfg.EventsStream, err)
	}
	q.probe.mu.Lock()
	defer q.probe.mu.Unlock()
	if q.cfg.ProbeEvery > 0 && !q.probe.at.IsZero() && time.Since(q.probe.at) < q.cfg.ProbeEvery {
		return q.probe.err
	}
	q.probe.err = q.probeWrite(ctx)
	q.probe.at = time.Now()
	return q.probe.err
}

// probeWrite writes a probe to the probe stream.
func (q *Queue) probeWrite(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := q.js.Publish(ctx, q.probeSubject, probeBody, jetstream.WithExpectStream(q.probeStream)); err != nil {
		return fmt.Errorf("queue not ready: probe write to stream %s: %w", q.probeStream, err)
	}
	return nil
}
