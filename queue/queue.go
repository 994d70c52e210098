package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
)

// Queue is ordersync's JetStream queue: it publishes received webhooks and
// outgoing order events, and hands events to workers. It implements
// ordersync.EventPublisher and ordersync.MessagePublisher. It does not own
// the connection: close that after the last use.
type Queue struct {
	cfg      Config
	nc       *nats.Conn
	js       jetstream.JetStream
	consumer jetstream.Consumer
	metrics  *metrics
	logger   *slog.Logger

	eventsPrefix string // "<prefix>.events."
	// probeStream and probeSubject take readiness probes (Ready).
	probeStream, probeSubject string
	// probe is the last probe's outcome, which Ready answers with for
	// cfg.ProbeEvery; its lock lets one probe run at a time.
	probe struct {
		mu  sync.Mutex
		at  time.Time
		err error
	}
	// ns moves the domain's order subjects onto the prefix, and back.
	ns           ordersync.Namespace
	ordersPrefix string // "<prefix>.orders."
}

var (
	_ ordersync.EventPublisher   = (*Queue)(nil)
	_ ordersync.MessagePublisher = (*Queue)(nil)
)

// New creates or updates the streams and the durable consumer. It is
// idempotent and safe when several processes start at once.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Queue, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, errors.New("queue: no NATS connection")
	}
	// The async publisher's own timeout only reclaims futures whose ack never
	// came (callers stop waiting at their ctx): longer than any caller waits.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(publishAbandonAfter))
	if err != nil {
		return nil, fmt.Errorf("queue: open JetStream: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("queue: register metrics: %w", err)
	}
	ns := ordersync.Namespace(cfg.SubjectPrefix)
	q := &Queue{
		cfg: cfg, nc: nc, js: js, metrics: m,
		logger:       cfg.Logger,
		eventsPrefix: cfg.SubjectPrefix + ".events.",
		probeStream:  cfg.EventsStream + "_PROBE",
		probeSubject: cfg.SubjectPrefix + ".probe",
		ns:           ns,
		ordersPrefix: ns.OrdersPrefix(),
	}
	streams := []jetstream.StreamConfig{{
		Name:        cfg.EventsStream,
		Description: "ordersync: received webhooks waiting for a worker",
		Subjects:    []string{q.eventsPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		Discard:     jetstream.DiscardOld,
	}, {
		Name:        cfg.OrdersStream,
		Description: "ordersync: order events (PAID trigger, status changes) for fulfilment",
		Subjects:    []string{q.ordersPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.OrdersDuplicateWindow,
		MaxAge:      cfg.OrdersMaxAge,
		Discard:     jetstream.DiscardOld,
	}, {
		Name:        q.probeStream,
		Description: "ordersync: readiness probes, the last one kept",
		Subjects:    []string{q.probeSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxMsgs:     1,
		Discard:     jetstream.DiscardOld,
	}}
	for _, sc := range streams {
		if err := retryRace(ctx, createAttemptTimeout, func(ctx context.Context) error {
			_, err := js.CreateOrUpdateStream(ctx, sc)
			return err
		}); err != nil {
			return nil, fmt.Errorf("queue: create or update stream %s: %w", sc.Name, err)
		}
	}
	cc := jetstream.ConsumerConfig{
		Durable:       cfg.Consumer,
		Description:   "ordersync workers",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxAckPending: cfg.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: q.eventsPrefix + ">",
		MaxDeliver:    -1,
	}
	if err := retryRace(ctx, createAttemptTimeout, func(ctx context.Context) error {
		c, err := js.CreateOrUpdateConsumer(ctx, cfg.EventsStream, cc)
		q.consumer = c
		return err
	}); err != nil {
		return nil, fmt.Errorf("queue: create or update consumer %s: %w", cfg.Consumer, err)
	}
	return q, nil
}

// createAttemptTimeout bounds one attempt of a stream, consumer or bucket
// creation. A JetStream API request can go unanswered (seen from a server
// busy with several creations at once); the next attempt is a new request.
const createAttemptTimeout = 3 * time.Second

// errCodeSubjectOverlap is what a 2.9 server may answer the loser of a
// race to create the same stream, instead of "name already in use".
const errCodeSubjectOverlap jetstream.ErrorCode = 10065

// retryRace runs op again when it lost a creation race to another process
// (the stream, consumer or bucket appeared between its lookup and its
// create), when the server failed it (5xx), or when its request went
// unanswered within the attempt's timeout: up to five more times, from
// 50 ms, jittered so racing processes part; the waits add up to about
// 0.7 s, time for a busy server that failed a creation to recover. Any
// other error ends it.
func retryRace(ctx context.Context, attemptTimeout time.Duration, op func(context.Context) error) error {
	b := backoff.WithMaxRetries(backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond)), 5)
	return backoff.Retry(func() error {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		err := op(actx)
		// An attempt that ran out of its own time is sent again; once ctx
		// itself is done, the backoff stops and says so.
		if err == nil || lostRace(err) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return backoff.Permanent(err)
	}, backoff.WithContext(b, ctx))
}

// lostRace reports whether err is worth another attempt: a lost creation
// race or a server-side failure.
func lostRace(err error) bool {
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) ||
		errors.Is(err, jetstream.ErrConsumerExists) ||
		errors.Is(err, jetstream.ErrConsumerNameAlreadyInUse) ||
		errors.Is(err, jetstream.ErrBucketExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == errCodeSubjectOverlap || apiErr.Code >= 500)
}

// publishAbandonAfter is when an unacknowledged asynchronous publish is
// given up, freeing its slot in the publisher's pending window.
const publishAbandonAfter = time.Minute
