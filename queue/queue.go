package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// Headers of a queued event besides Nats-Msg-Id, so a worker knows what the
// receiver knew without parsing anything but headers. The account is not
// among them: it is the subject's last token (releases before also wrote
// it in an Ordersync-Account header, always equal to the subject's).
const (
	// HeaderReceivedNanos is the receipt time in Unix nanoseconds, decimal:
	// read back with one integer parse, no calendar arithmetic.
	HeaderReceivedNanos = "Ordersync-Received-Unix-Nano"
	// HeaderReceivedAt is the receipt time as RFC 3339 text with
	// nanoseconds: read from events that carry it, never written.
	HeaderReceivedAt = "Ordersync-Received-At"
	HeaderSignature  = "Ordersync-Signature"
	HeaderIgnored    = "Ordersync-Ignored"
	HeaderReplayOf   = "Ordersync-Replay-Of"
	HeaderCause      = "Ordersync-Cause"
	// HeaderEvent is the body as the receiver parsed it
	// (ordersync.Event.Envelope), so the pool does not parse the body
	// again; absent from events queued by earlier releases, from replays
	// and from events one line cannot carry, whose body is parsed.
	HeaderEvent = "Ordersync-Event"
	// HeaderFromStatus is, on an order event, the status the change left.
	HeaderFromStatus = "Ordersync-From-Status"
	// HeaderAccount, HeaderOrderCode and HeaderStatus are, on an order
	// event, the account, the order code and the status the change reached,
	// as the payload says them; HeaderStatusChangeAt is where an HTTP
	// delivery's body puts its "statusChange" (a byte offset in the
	// payload). A dispatcher reads them instead of the payload when all four
	// are there; events published before carry none of them.
	HeaderAccount        = "Ordersync-Account"
	HeaderOrderCode      = "Ordersync-Order-Code"
	HeaderStatus         = "Ordersync-Status"
	HeaderStatusChangeAt = "Ordersync-Status-Change-At"
	// HeaderTraceParent is the W3C traceparent of the hop that published
	// the message, on events and order events alike; absent with tracing
	// off.
	HeaderTraceParent = "traceparent"
)

// DefaultAckWait is how long a delivered event may go unsettled before it
// is redelivered: the events a killed worker held come back after it.
const DefaultAckWait = 30 * time.Second

// Config configures the streams and the durable consumer.
type Config struct {
	// SubjectPrefix is the first subject token; default "ordersync".
	SubjectPrefix string
	// EventsStream and OrdersStream name the streams; defaults
	// "ORDERSYNC_EVENTS" and "ORDERSYNC_ORDERS".
	EventsStream string
	OrdersStream string
	// Replicas of both streams; default 1. Use 3 on a cluster.
	Replicas int
	// DuplicateWindow is how long the events stream remembers a MsgID;
	// default 2m.
	DuplicateWindow time.Duration
	// OrdersDuplicateWindow is the same for order events; default 1h, long
	// enough to cover a relay that crashed between publish and bookkeeping.
	OrdersDuplicateWindow time.Duration
	// OrdersMaxAge is how long order events are kept for subscribers;
	// default 7 days.
	OrdersMaxAge time.Duration
	// Consumer is the durable consumer workers share; default
	// "ordersync-worker".
	Consumer string
	// AckWait is how long a delivered event may go unsettled before it is
	// redelivered; default DefaultAckWait.
	AckWait time.Duration
	// MaxAckPending bounds delivered-but-unsettled events; default 20000.
	MaxAckPending int
	// ProbeEvery is how long a readiness probe's write answers Ready
	// before the next one is made; default DefaultProbeEvery, negative:
	// a write on every call.
	ProbeEvery time.Duration
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

func (c *Config) withDefaults() {
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = string(ordersync.DefaultNamespace)
	}
	if c.EventsStream == "" {
		c.EventsStream = "ORDERSYNC_EVENTS"
	}
	if c.OrdersStream == "" {
		c.OrdersStream = "ORDERSYNC_ORDERS"
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.OrdersDuplicateWindow == 0 {
		c.OrdersDuplicateWindow = time.Hour
	}
	if c.OrdersMaxAge == 0 {
		c.OrdersMaxAge = 7 * 24 * time.Hour
	}
	if c.Consumer == "" {
		c.Consumer = "ordersync-worker"
	}
	if c.ProbeEvery == 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = 20000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	for _, p := range strings.Split(c.SubjectPrefix, ".") {
		if !validToken(p) {
			return fmt.Errorf("queue: SubjectPrefix %q is not a valid subject prefix", c.SubjectPrefix)
		}
	}
	for field, name := range map[string]string{"EventsStream": c.EventsStream, "OrdersStream": c.OrdersStream, "Consumer": c.Consumer} {
		if !validToken(name) {
			return fmt.Errorf("queue: %s %q is not a valid name", field, name)
		}
	}
	if c.EventsStream == c.OrdersStream {
		return fmt.Errorf("queue: EventsStream and OrdersStream are both %q", c.EventsStream)
	}
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("queue: Replicas %d out of range 1..5", c.Replicas)
	case c.DuplicateWindow < 0:
		return fmt.Errorf("queue: DuplicateWindow %s must be positive", c.DuplicateWindow)
	case c.OrdersDuplicateWindow < 0:
		return fmt.Errorf("queue: OrdersDuplicateWindow %s must be positive", c.OrdersDuplicateWindow)
	case c.OrdersMaxAge < 0:
		return fmt.Errorf("queue: OrdersMaxAge %s must be positive", c.OrdersMaxAge)
	case c.OrdersDuplicateWindow > c.OrdersMaxAge:
		return fmt.Errorf("queue: OrdersDuplicateWindow %s exceeds OrdersMaxAge %s", c.OrdersDuplicateWindow, c.OrdersMaxAge)
	case c.AckWait <= 0:
		return fmt.Errorf("queue: AckWait %s must be positive", c.AckWait)
	case c.MaxAckPending < 1:
		return fmt.Errorf("queue: MaxAckPending %d must be at least 1", c.MaxAckPending)
	}
	return nil
}

// validToken reports whether s can be one token of a NATS subject or a
// stream or consumer name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	return !strings.ContainsAny(s, ".*> \t\r\n\x00/\\")
}

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
		if err := retryRace(ctx, func() error {
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
	if err := retryRace(ctx, func() error {
		c, err := js.CreateOrUpdateConsumer(ctx, cfg.EventsStream, cc)
		q.consumer = c
		return err
	}); err != nil {
		return nil, fmt.Errorf("queue: create or update consumer %s: %w", cfg.Consumer, err)
	}
	return q, nil
}

// retryRace runs op again when it lost a creation race to another process
// (the stream or consumer appeared between its lookup and its create): up
// to four more times, from 10 ms, jittered so racing processes part.
func retryRace(ctx context.Context, op func() error) error {
	b := backoff.WithMaxRetries(backoff.NewExponentialBackOff(backoff.WithInitialInterval(10*time.Millisecond)), 4)
	return backoff.Retry(func() error {
		err := op()
		if err != nil && !(errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) ||
			errors.Is(err, jetstream.ErrConsumerExists) ||
			errors.Is(err, jetstream.ErrConsumerNameAlreadyInUse)) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
}

// publishAbandonAfter is when an unacknowledged asynchronous publish is
// given up, freeing its slot in the publisher's pending window.
const publishAbandonAfter = time.Minute

// EventSubject is the subject an account's events are published on.
func (q *Queue) EventSubject(account string) string { return q.eventsPrefix + account }

// PublishEvent stores a received event in the events stream and returns
// after JetStream acknowledged it (or ctx ended). duplicate reports that an
// event with the same MsgID was stored within the duplicate window.
func (q *Queue) PublishEvent(ctx context.Context, ev *ordersync.InboundEvent) (bool, error) {
	if !validToken(ev.Account) {
		return false, fmt.Errorf("publish event: account %q is not a valid subject token", ev.Account)
	}
	if ev.MsgID == "" {
		return false, errors.New("publish event: no MsgID")
	}
	// One backing array for the header values: a publish per webhook, so
	// allocations count.
	vals := make([]string, 0, 8)
	h := make(nats.Header, 8)
	set := func(key, value string) {
		vals = append(vals, value)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	set(jetstream.MsgIDHeader, ev.MsgID)
	set(jetstream.ExpectedStreamHeader, q.cfg.EventsStream)
	if !ev.ReceivedAt.IsZero() {
		set(HeaderReceivedNanos, strconv.FormatInt(ev.ReceivedAt.UnixNano(), 10))
	}
	if ev.Signature != "" {
		set(HeaderSignature, string(ev.Signature))
	}
	if ev.Ignored != "" {
		set(HeaderIgnored, string(ev.Ignored))
	}
	if ev.ReplayOf != 0 {
		set(HeaderReplayOf, strconv.FormatInt(ev.ReplayOf, 10))
	}
	if ev.Cause != "" {
		set(HeaderCause, string(ev.Cause))
	}
	if ev.Event != nil {
		if line, ok := ev.Event.Envelope(); ok {
			set(HeaderEvent, line)
		}
	}
	if ev.TraceParent != "" {
		set(HeaderTraceParent, ev.TraceParent)
	}
	msg := &nats.Msg{Subject: q.eventsPrefix + ev.Account, Header: h, Data: ev.Body}
	dup, err := q.publish(ctx, msg)
	if err != nil {
		return false, fmt.Errorf("publish event %s: %w", ev.MsgID, err)
	}
	return dup, nil
}

// PublishMessages stores outgoing order events in the orders stream, in
// order, each deduplicated by its MsgID, as ordersync.MessagePublisher
// says. It sends them all before it waits for the first ack, then waits for
// the acks in order: the outbox relay's batches cost about half the CPU per
// message this way (BenchmarkRelay), and JetStream stores the messages of
// one connection in the order they were sent. The domain's subjects
// (ordersync.SubjectPaid, …) are moved onto the configured prefix.
func (q *Queue) PublishMessages(ctx context.Context, msgs []ordersync.OutboxMessage) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	var sendErr error
	for _, m := range msgs {
		f, err := q.sendMessage(m)
		if err != nil {
			sendErr = err
			break
		}
		futures = append(futures, f)
	}
	dups := make([]bool, 0, len(futures))
	for i, f := range futures {
		ack, err := waitAck(ctx, f)
		q.metrics.orders.record(start, ack, err)
		if err != nil {
			return dups, fmt.Errorf("publish %s %s: %w", msgs[i].Subject, msgs[i].MsgID, err)
		}
		dups = append(dups, ack.Duplicate)
	}
	if sendErr != nil {
		q.metrics.orders.record(start, nil, sendErr)
		return dups, sendErr
	}
	return dups, nil
}

// sendMessage sends one outgoing order event without waiting for its ack.
func (q *Queue) sendMessage(m ordersync.OutboxMessage) (jetstream.PubAckFuture, error) {
	subj, err := q.orderSubject(m.Subject)
	if err != nil {
		return nil, err
	}
	if m.MsgID == "" {
		return nil, fmt.Errorf("publish %s: no msgID", m.Subject)
	}
	h := nats.Header{
		jetstream.MsgIDHeader:          []string{m.MsgID},
		jetstream.ExpectedStreamHeader: []string{q.cfg.OrdersStream},
	}
	if m.From != "" {
		h[HeaderFromStatus] = []string{string(m.From)}
	}
	if m.To != "" && m.StatusChangeAt > 0 {
		h[HeaderAccount] = []string{m.Account}
		h[HeaderOrderCode] = []string{m.OrderCode}
		h[HeaderStatus] = []string{string(m.To)}
		h[HeaderStatusChangeAt] = []string{strconv.Itoa(m.StatusChangeAt)}
	}
	if m.TraceParent != "" {
		h[HeaderTraceParent] = []string{m.TraceParent}
	}
	f, err := q.js.PublishMsgAsync(&nats.Msg{Subject: subj, Header: h, Data: m.Payload})
	if err != nil {
		return nil, fmt.Errorf("publish %s %s: %w", subj, m.MsgID, err)
	}
	return f, nil
}

// orderSubject maps an order subject onto the configured prefix and
// checks it.
func (q *Queue) orderSubject(subject string) (string, error) {
	subj := q.ns.Subject(subject)
	rest, ok := strings.CutPrefix(subj, q.ordersPrefix)
	if !ok || rest == "" {
		return "", fmt.Errorf("publish %s: not an order subject (want %s…)", subject, ordersync.SubjectOrdersPrefix)
	}
	for _, tok := range strings.Split(rest, ".") {
		if !validToken(tok) {
			return "", fmt.Errorf("publish %s: invalid subject", subject)
		}
	}
	return subj, nil
}

// publish sends an event and waits for its ack. It uses the asynchronous
// publisher and waits on the future: many concurrent callers then share the
// connection's one ack subscription instead of each making a request.
func (q *Queue) publish(ctx context.Context, msg *nats.Msg) (bool, error) {
	start := time.Now()
	ack, err := q.awaitAck(ctx, msg)
	q.metrics.events.record(start, ack, err)
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

func (q *Queue) awaitAck(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := q.js.PublishMsgAsync(msg)
	if err != nil {
		return nil, err
	}
	return waitAck(ctx, f)
}

// waitAck waits for a published message's ack, its failure, or ctx.
func waitAck(ctx context.Context, f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

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
