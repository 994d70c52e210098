package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/internal/testenv"
)

func startEmbedded(t testing.TB, dir string, port int) *Embedded {
	t.Helper()
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

func connect(t testing.TB, e *Embedded) *nats.Conn {
	t.Helper()
	nc, err := e.Connect(t.Name())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// uniqueConfig names streams, consumer and prefix after a random token, so
// tests can share one external server.
func uniqueConfig() Config {
	b := make([]byte, 5)
	rand.Read(b)
	id := hex.EncodeToString(b)
	return Config{
		SubjectPrefix: "t" + id,
		EventsStream:  "T" + id + "_EVENTS",
		OrdersStream:  "T" + id + "_ORDERS",
		Consumer:      "worker",
	}
}

func newQueue(t testing.TB, nc *nats.Conn, cfg Config) *Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := New(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return q
}

// embeddedQueue is a fresh embedded server, connection and queue.
func embeddedQueue(t testing.TB, cfg Config) (*Embedded, *Queue) {
	t.Helper()
	e := startEmbedded(t, t.TempDir(), 0)
	return e, newQueue(t, connect(t, e), cfg)
}

func testEvent(i int) *ordersync.InboundEvent {
	return &ordersync.InboundEvent{
		MsgID:      fmt.Sprintf("msg-%06d", i),
		Account:    ordersync.DefaultAccount,
		Body:       []byte(fmt.Sprintf(`{"orderId":"%d","orderType":"FASTLINK_CHARGE","type":"Created"}`, i)),
		ReceivedAt: time.Date(2026, 10, 10, 18, 2, 41, 553120700, time.UTC),
		Signature:  ordersync.SignatureValid,
		Cause:      ordersync.CauseWebhook,
	}
}

func publish(t testing.TB, q *Queue, ev *ordersync.InboundEvent) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dup, err := q.PublishEvent(ctx, ev)
	if err != nil {
		t.Fatalf("PublishEvent %s: %v", ev.MsgID, err)
	}
	return dup
}

// next fetches one batch, failing the test on error.
func next(t testing.TB, src ordersync.EventSource, max int, wait time.Duration) []ordersync.QueuedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait+5*time.Second)
	defer cancel()
	ds, err := src.Next(ctx, max, wait)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ds
}

// drain consumes and acknowledges until want distinct MsgIDs arrived or ctx
// ends, and returns how often each MsgID was seen.
func drain(t testing.TB, ctx context.Context, src ordersync.EventSource, want int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for len(seen) < want {
		ds, err := src.Next(ctx, 100, 200*time.Millisecond)
		if err != nil {
			t.Fatalf("Next after %d of %d events: %v", len(seen), want, err)
		}
		for _, d := range ds {
			seen[d.Event().MsgID]++
			if err := d.Ack(ctx); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
	}
	return seen
}

// waitPending waits until the consumer reports want undelivered events: the
// consumer learns of stored messages asynchronously, a moment after the ack.
func waitPending(t testing.TB, src ordersync.EventSource, want uint64) {
	t.Helper()
	testenv.Await(t, 5*time.Second, 5*time.Millisecond, func() error {
		n, err := src.Pending(context.Background())
		if err != nil {
			t.Fatalf("Pending: %v", err)
		}
		if n != want {
			return fmt.Errorf("Pending = %d, want %d", n, want)
		}
		return nil
	})
}

func TestStartEmbeddedListener(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		port       int
		wantListen bool
	}{
		{"no port: in-process only", 0, false},
		{"any free port", -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			e := startEmbedded(t, dir, tt.port)
			q := newQueue(t, connect(t, e), uniqueConfig())
			if publish(t, q, testEvent(1)) {
				t.Fatal("first publish reported duplicate")
			}
			u := e.ClientURL()
			if !tt.wantListen {
				if u != "" {
					t.Fatalf("ClientURL = %q, want none without a port", u)
				}
				return
			}
			parsed, err := url.Parse(u)
			if err != nil || parsed.Port() == "" || parsed.Port() == "0" {
				t.Fatalf("ClientURL = %q, want a URL with the chosen port", u)
			}
			conn, err := net.DialTimeout("tcp", parsed.Host, time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", parsed.Host, err)
			}
			conn.Close()
			password, err := os.ReadFile(filepath.Join(dir, "nats-password"))
			if err != nil {
				t.Fatal(err)
			}
			withPassword := strings.Replace(u, "nats://", "nats://"+EmbeddedUser+":"+strings.TrimSpace(string(password))+"@", 1)
			nc, err := Connect(context.Background(), ConnConfig{URL: withPassword, Name: "tcp-client"})
			if err != nil {
				t.Fatalf("Connect over TCP: %v", err)
			}
			defer nc.Close()
			qTCP := newQueue(t, nc, q.cfg)
			if !publish(t, qTCP, testEvent(1)) {
				t.Fatal("same MsgID over TCP not reported duplicate")
			}
		})
	}
}

func TestStartEmbeddedConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		cfg       EmbeddedConfig
		wantField string
	}{
		{"no store dir", EmbeddedConfig{}, "StoreDir"},
		{"bad sync policy", EmbeddedConfig{StoreDir: t.TempDir(), Sync: "sometimes"}, "Sync"},
		{"negative sync interval", EmbeddedConfig{StoreDir: t.TempDir(), Sync: "-1s"}, "Sync"},
		{"port out of range", EmbeddedConfig{StoreDir: t.TempDir(), Port: 70000}, "Port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := StartEmbedded(tt.cfg)
			if err == nil {
				e.Shutdown()
				t.Fatal("StartEmbedded succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("error %q does not name %s", err, tt.wantField)
			}
		})
	}
}

func TestSyncPolicyServerOptions(t *testing.T) {
	tests := []struct {
		policy       SyncPolicy
		wantInterval time.Duration
		wantAlways   bool
		wantErr      bool
	}{
		{"", 0, false, false},
		{SyncDefault, 0, false, false},
		{SyncAlways, 0, true, false},
		{SyncEvery(time.Second), time.Second, false, false},
		{"250ms", 250 * time.Millisecond, false, false},
		{"0s", 0, false, true},
		{"often", 0, false, true},
	}
	for _, tt := range tests {
		interval, always, err := tt.policy.serverOptions()
		if (err != nil) != tt.wantErr || interval != tt.wantInterval || always != tt.wantAlways {
			t.Errorf("%q: got (%s, %v, %v), want (%s, %v, err=%v)", tt.policy, interval, always, err, tt.wantInterval, tt.wantAlways, tt.wantErr)
		}
	}
}

// Every sync policy must give a working server that keeps what it
// acknowledged across a restart.
func TestSyncPoliciesRestart(t *testing.T) {
	t.Parallel()
	for _, policy := range []SyncPolicy{SyncDefault, SyncAlways, SyncEvery(50 * time.Millisecond)} {
		t.Run(string(policy), func(t *testing.T) {
			dir := t.TempDir()
			cfg := uniqueConfig()
			e, err := StartEmbedded(EmbeddedConfig{StoreDir: dir, Sync: policy})
			if err != nil {
				t.Fatal(err)
			}
			nc, err := e.Connect("sync")
			if err != nil {
				t.Fatal(err)
			}
			q := newQueue(t, nc, cfg)
			for i := range 20 {
				publish(t, q, testEvent(i))
			}
			nc.Close()
			e.Shutdown()

			e2 := startEmbedded(t, dir, 0)
			q2 := newQueue(t, connect(t, e2), cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if seen := drain(t, ctx, q2.Events(), 20); len(seen) != 20 {
				t.Fatalf("got %d events after restart, want 20", len(seen))
			}
		})
	}
}

func TestNewConfigErrors(t *testing.T) {
	_, q := embeddedQueue(t, uniqueConfig())
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{"prefix with wildcard", Config{SubjectPrefix: "orders.*"}, "SubjectPrefix"},
		{"stream name with dot", Config{EventsStream: "A.B"}, "EventsStream"},
		{"same stream twice", Config{EventsStream: "X", OrdersStream: "X"}, "OrdersStream"},
		{"replicas", Config{Replicas: 7}, "Replicas"},
		{"dedupe longer than max age", Config{OrdersMaxAge: time.Minute}, "OrdersDuplicateWindow"},
		{"negative ack wait", Config{AckWait: -time.Second}, "AckWait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), q.nc, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("New error = %v, want one naming %s", err, tt.wantField)
			}
		})
	}
}

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	src := q.Events()
	want := testEvent(7)
	want.Ignored = ordersync.IgnoreOtherProduct
	want.ReplayOf = 42
	want.Cause = ordersync.CauseReplay
	if dup := publish(t, q, want); dup {
		t.Fatal("first publish reported duplicate")
	}
	ctx := context.Background()
	waitPending(t, src, 1)
	ds := next(t, src, 10, time.Second)
	if len(ds) != 1 {
		t.Fatalf("got %d events, want 1", len(ds))
	}
	d := ds[0]
	got := d.Event()
	if got.MsgID != want.MsgID || got.Account != want.Account || string(got.Body) != string(want.Body) ||
		!got.ReceivedAt.Equal(want.ReceivedAt) || got.Signature != want.Signature || got.Ignored != want.Ignored ||
		got.ReplayOf != want.ReplayOf || got.Cause != want.Cause {
		t.Fatalf("event round trip:\n got %+v\nwant %+v", got, want)
	}
	// The receipt time travels as Unix nanoseconds, not as text; the
	// account only in the subject.
	h := d.(*queuedEvent).msg.Headers()
	if v := h.Get("Ordersync-Account"); v != "" {
		t.Fatalf("account header %q written beside the subject %s", v, d.(*queuedEvent).msg.Subject())
	}
	if h.Get(HeaderReceivedNanos) != strconv.FormatInt(want.ReceivedAt.UnixNano(), 10) || h.Get(HeaderReceivedAt) != "" {
		t.Fatalf("receipt headers %q=%q, %q=%q; want Unix nanoseconds in the first, nothing in the second",
			HeaderReceivedNanos, h.Get(HeaderReceivedNanos), HeaderReceivedAt, h.Get(HeaderReceivedAt))
	}
	if d.Attempt() != 1 {
		t.Fatalf("Attempt = %d, want 1", d.Attempt())
	}
	waitPending(t, src, 0)
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if ds := next(t, src, 10, 300*time.Millisecond); len(ds) != 0 {
		t.Fatalf("got %d events after ack, want none", len(ds))
	}
}

func TestPublishDuplicateMsgID(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	ev := testEvent(1)
	if publish(t, q, ev) {
		t.Fatal("first publish reported duplicate")
	}
	if !publish(t, q, ev) {
		t.Fatal("second publish of the same MsgID not reported duplicate")
	}
	other := testEvent(2)
	if publish(t, q, other) {
		t.Fatal("different MsgID reported duplicate")
	}
	// Each publish returns with the stream's acknowledgement, and the stream
	// takes its publishes in order: once the later message is acknowledged,
	// the duplicate has been dropped for good, so no window is needed.
	waitPending(t, q.Events(), 2) // the duplicate stored once
	m := q.metrics.events
	if s, d := testutil.ToFloat64(m.stored), testutil.ToFloat64(m.duplicate); s != 2 || d != 1 {
		t.Fatalf("metrics stored=%v duplicate=%v, want 2 and 1", s, d)
	}
}

func TestPublishEventInvalid(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	tests := []struct {
		name string
		ev   ordersync.InboundEvent
	}{
		{"account with dot", ordersync.InboundEvent{MsgID: "a", Account: "a.b"}},
		{"account with wildcard", ordersync.InboundEvent{MsgID: "a", Account: ">"}},
		{"no account", ordersync.InboundEvent{MsgID: "a"}},
		{"no MsgID", ordersync.InboundEvent{Account: "default"}},
	}
	for _, tt := range tests {
		if _, err := q.PublishEvent(context.Background(), &tt.ev); err == nil {
			t.Errorf("%s: PublishEvent succeeded", tt.name)
		}
	}
}

func TestRedelivery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		settle func(ordersync.QueuedEvent) error
	}{
		{"retry with delay", func(d ordersync.QueuedEvent) error { return d.Retry(50 * time.Millisecond) }},
		{"not settled within AckWait", func(ordersync.QueuedEvent) error { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := uniqueConfig()
			cfg.AckWait = 300 * time.Millisecond
			_, q := embeddedQueue(t, cfg)
			src := q.Events()
			publish(t, q, testEvent(1))
			ds := next(t, src, 1, time.Second)
			if len(ds) != 1 || ds[0].Attempt() != 1 {
				t.Fatalf("first pull: %d events", len(ds))
			}
			if err := tt.settle(ds[0]); err != nil {
				t.Fatal(err)
			}
			ds = next(t, src, 1, 3*time.Second)
			if len(ds) != 1 {
				t.Fatal("event not redelivered")
			}
			if ds[0].Attempt() != 2 || ds[0].Event().MsgID != "msg-000001" {
				t.Fatalf("redelivery: attempt %d, MsgID %s", ds[0].Attempt(), ds[0].Event().MsgID)
			}
			if err := ds[0].Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestExtendAndTerm: a terminated event is never redelivered, nor is one
// kept in progress past its AckWait by Extend, nor one acked after that.
// The subject is JetStream's own AckWait timer, so the test spends real time
// against it: an AckWait of a second, extended every fifth of one, leaves a
// loaded machine 800ms to be late with an Extend.
func TestExtendAndTerm(t *testing.T) {
	t.Parallel()
	cfg := uniqueConfig()
	cfg.AckWait = time.Second
	_, q := embeddedQueue(t, cfg)
	src := q.Events()
	publish(t, q, testEvent(1))
	publish(t, q, testEvent(2))
	waitPending(t, src, 2)
	ds := next(t, src, 2, time.Second)
	if len(ds) != 2 {
		t.Fatalf("got %d events, want 2", len(ds))
	}
	if err := ds[0].Term(); err != nil {
		t.Fatal(err)
	}
	// Keep the second in progress past its AckWait: it must not come back.
	extended := time.Now()
	for time.Since(extended) < cfg.AckWait+cfg.AckWait/5 {
		time.Sleep(cfg.AckWait / 5)
		if err := ds[1].Extend(); err != nil {
			t.Fatal(err)
		}
	}
	if again := next(t, src, 2, 200*time.Millisecond); len(again) != 0 {
		t.Fatalf("terminated or extended event redelivered: %s", again[0].Event().MsgID)
	}
	if err := ds[1].Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again := next(t, src, 2, cfg.AckWait+cfg.AckWait/5); len(again) != 0 {
		t.Fatalf("event redelivered after term/ack: %s", again[0].Event().MsgID)
	}
}

// TestNextWaitsAndRespectsContext times a pull's wait and a cancel's
// return against upper bounds, so it runs alone.
func TestNextWaitsAndRespectsContext(t *testing.T) {
	e, q := embeddedQueue(t, uniqueConfig())
	src := q.Events()

	start := time.Now()
	ds, err := src.Next(context.Background(), 10, 200*time.Millisecond)
	if err != nil || len(ds) != 0 {
		t.Fatalf("empty queue: %d events, err %v; want none, nil", len(ds), err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("empty Next took %s, want about the 200ms wait", took)
	}

	// Cancelled while its pull waits at the server, Next returns at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := src.Next(ctx, 10, 10*time.Second)
		errc <- err
	}()
	waitPulling(t, q.consumer)
	start = time.Now()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Next error = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("cancelled Next returned %s after the cancel", took)
	}

	// An event published while Next waits is returned before the wait
	// ends. On a consumer of its own: the cancelled pull stays at the
	// server until its wait is over, counted by waitPulling, and would take
	// the event first (and hand it back).
	q = newQueue(t, connect(t, e), uniqueConfig())
	src = q.Events()
	type result struct {
		ds  []ordersync.QueuedEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ds, err := src.Next(ctx, 10, 5*time.Second)
		done <- result{ds, err}
	}()
	waitPulling(t, q.consumer)
	published := time.Now()
	publish(t, q, testEvent(3))
	r := <-done
	if after := time.Since(published); r.err != nil || len(r.ds) != 1 || after > 3*time.Second {
		t.Fatalf("got %d events (err %v) %s after the publish, want 1 soon after it", len(r.ds), r.err, after)
	}
	r.ds[0].Ack(context.Background())
}

// waitPulling returns once one pull request of consumer c waits at the
// server: the long poll of a Next, not the request for what is there now.
func waitPulling(t testing.TB, c jetstream.Consumer) {
	t.Helper()
	testenv.Await(t, 10*time.Second, 5*time.Millisecond, func() error {
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatalf("consumer info: %v", err)
		}
		if info.NumWaiting != 1 {
			return fmt.Errorf("%d pull requests waiting, want 1", info.NumWaiting)
		}
		return nil
	})
}

// TestNextLongPollWakesOnEvent: a Next whose wait is far longer than the
// test returns the event published while its pull waits at the server: the
// wait is a long poll, so the long default wait of an idle worker costs an
// event no latency. A pull that only ended at its wait would leave Next
// empty at the test's deadline.
func TestNextLongPollWakesOnEvent(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	src := q.Events()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		ds  []ordersync.QueuedEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		ds, err := src.Next(ctx, 10, time.Hour)
		done <- result{ds, err}
	}()
	waitPulling(t, q.consumer)
	publish(t, q, testEvent(1))
	r := <-done
	if r.err != nil || len(r.ds) != 1 {
		t.Fatalf("Next waiting an hour: %d events, err %v; want the one published while it waited", len(r.ds), r.err)
	}
	if err := r.ds[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// Nothing acknowledged is lost: publish with acks, stop the server, start a
// new one on the same directory, and every event is there.
func TestNothingAcknowledgedIsLost(t *testing.T) {
	t.Parallel()
	const n = 2000
	dir := t.TempDir()
	cfg := uniqueConfig()
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := e.Connect("before")
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, nc, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := q.PublishEvent(context.Background(), testEvent(i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("publish: %v", err)
	}
	// Half are consumed and acknowledged before the restart.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := drain(t, ctx, q.Events(), n/2)
	nc.Drain()
	e.Shutdown()

	e2 := startEmbedded(t, dir, 0)
	q2 := newQueue(t, connect(t, e2), cfg)
	pending, err := q2.Events().Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := drain(t, ctx, q2.Events(), int(pending))
	for id := range before {
		after[id]++
	}
	for i := range n {
		if after[fmt.Sprintf("msg-%06d", i)] == 0 {
			t.Fatalf("event %d lost across the restart (%d before, %d after)", i, len(before), pending)
		}
	}
}

func TestOrdersPublish(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	ctx := context.Background()
	tests := []struct {
		subject, want string
		wantErr       bool
	}{
		{ordersync.SubjectPaid, q.cfg.SubjectPrefix + ".orders.paid", false},
		{ordersync.SubjectStatusPrefix + "CANCELLED", q.cfg.SubjectPrefix + ".orders.status.CANCELLED", false},
		{q.cfg.SubjectPrefix + ".orders.paid", q.cfg.SubjectPrefix + ".orders.paid", false},
		{"ordersync.events.default", "", true},
		{"ordersync.orders.", "", true},
		{"ordersync.orders.a..b", "", true},
	}
	publish := func(subject, msgID, data string) (bool, error) {
		dups, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{{Subject: subject, MsgID: msgID, Payload: []byte(data)}})
		if err == nil && len(dups) != 1 {
			t.Fatalf("PublishMessages(%q) of one message: %d results and no error", subject, len(dups))
		}
		if err != nil {
			return false, err
		}
		return dups[0], nil
	}
	for i, tt := range tests {
		msgID := fmt.Sprintf("order-%d", i)
		dup, err := publish(tt.subject, msgID, `{"orderCode":"yY7Mcnd"}`)
		if (err != nil) != tt.wantErr {
			t.Fatalf("publish %q: error = %v, wantErr %v", tt.subject, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		if dup {
			t.Fatalf("publish %q: first publish reported duplicate", tt.subject)
		}
		if dup, err := publish(tt.subject, msgID, `{}`); err != nil || !dup {
			t.Fatalf("publish %q again: dup=%v err=%v, want duplicate", tt.subject, dup, err)
		}
		stream, err := q.js.Stream(ctx, q.cfg.OrdersStream)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := stream.GetLastMsgForSubject(ctx, tt.want)
		if err != nil {
			t.Fatalf("no message on %s: %v", tt.want, err)
		}
		if msg.Header.Get(jetstream.MsgIDHeader) != msgID {
			t.Fatalf("message on %s has Nats-Msg-Id %q, want %q", tt.want, msg.Header.Get(jetstream.MsgIDHeader), msgID)
		}
	}
}

// TestPublishMessagesInOrder: a batch is stored in the order given, its
// duplicates reported as such; a message that cannot be sent ends the batch,
// the messages before it stored and reported, none after it sent.
func TestPublishMessagesInOrder(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	ctx := context.Background()
	msg := func(id string) ordersync.OutboxMessage {
		return ordersync.OutboxMessage{Subject: ordersync.SubjectStatusPrefix + "PAID", MsgID: id, Payload: []byte(`{"id":"` + id + `"}`)}
	}
	if _, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{msg("m2")}); err != nil {
		t.Fatal(err)
	}

	dups, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{msg("m1"), msg("m2"), msg("m3"), msg("m4")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(dups, want) {
		t.Fatalf("duplicates = %v, want %v", dups, want)
	}

	bad := msg("m6")
	bad.Subject = "ordersync.events.default"
	dups, err = q.PublishMessages(ctx, []ordersync.OutboxMessage{msg("m5"), bad, msg("m7")})
	if err == nil || !strings.Contains(err.Error(), "ordersync.events.default") {
		t.Fatalf("a batch with a message on a wrong subject: err = %v, want one naming the subject", err)
	}
	if want := []bool{false}; !slices.Equal(dups, want) {
		t.Fatalf("duplicates before the failing message = %v, want %v", dups, want)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if dups, err := q.PublishMessages(cancelled, []ordersync.OutboxMessage{msg("m8")}); !errors.Is(err, context.Canceled) || len(dups) != 0 {
		t.Fatalf("with a cancelled context: %v, %v; want nothing published and context.Canceled", dups, err)
	}

	stream, err := q.js.Stream(ctx, q.cfg.OrdersStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, m.Header.Get(jetstream.MsgIDHeader))
	}
	if want := []string{"m2", "m1", "m3", "m4", "m5"}; !slices.Equal(stored, want) {
		t.Fatalf("the orders stream holds %v, want %v in that order", stored, want)
	}
	m := q.metrics.orders
	if s, d, f := testutil.ToFloat64(m.stored), testutil.ToFloat64(m.duplicate), testutil.ToFloat64(m.failed); s != 5 || d != 1 || f != 1 {
		t.Fatalf("metrics stored=%v duplicate=%v failed=%v, want 5, 1 and 1", s, d, f)
	}
}

func TestReady(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir(), 0)
	nc, err := e.Connect("ready")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q := newQueue(t, nc, uniqueConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	e.Shutdown()
	if err := q.Ready(ctx); err == nil {
		t.Fatal("Ready succeeded with the server shut down")
	}
	if _, err := q.PublishEvent(ctx, testEvent(1)); err == nil {
		t.Fatal("PublishEvent succeeded with the server shut down")
	}
}

// Several processes starting at once all create or update the same streams
// and consumer without failing.
func TestConcurrentNew(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir(), 0)
	cfg := uniqueConfig()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	queues := make(chan *Queue, 8)
	for i := range 8 {
		nc := connect(t, e)
		wg.Go(func() {
			c := cfg
			if i%2 == 1 {
				c.AckWait = 10 * time.Second // an update racing the creates
			}
			q, err := New(context.Background(), nc, c)
			if err != nil {
				errs <- err
				return
			}
			queues <- q
		})
	}
	wg.Wait()
	close(errs)
	close(queues)
	for err := range errs {
		t.Fatalf("concurrent New: %v", err)
	}
	var qs []*Queue
	for q := range queues {
		qs = append(qs, q)
	}
	for i, q := range qs {
		publish(t, q, testEvent(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if seen := drain(t, ctx, qs[0].Events(), len(qs)); len(seen) != 8 {
		t.Fatalf("consumed %d, want 8", len(seen))
	}
	if got := testutil.ToFloat64(qs[0].metrics.events.stored); got != 8 {
		t.Fatalf("shared registerer: stored = %v, want 8 across queues", got)
	}
}

// Under saturation (16 publishers and 4 consumers sharing the durable
// consumer flat out) the Fetch loop never stalls and nothing is lost.
// Five times MaxAckPending events keep the publishers and the consumers
// overlapping for the whole run; how many a second is BenchmarkConsume's.
// It runs alone: nats.go listens to a no-wait pull's answer for 1 s only,
// and an event in an answer later than that stays unsettled until the
// ack wait (30 s, past this test's deadline), so the stall it looks for
// is also what a machine too busy to read its socket for a second makes.
func TestFetchUnderSaturation(t *testing.T) {
	const (
		n          = 5000
		publishers = 16
		consumers  = 4
	)
	cfg := uniqueConfig()
	cfg.MaxAckPending = 1000
	e, q := embeddedQueue(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Go(func() {
			for i := p; i < n; i += publishers {
				if _, err := q.PublishEvent(ctx, testEvent(i)); err != nil {
					t.Errorf("publish %d: %v", i, err)
					return
				}
			}
		})
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		cons sync.WaitGroup
	)
	for c := range consumers {
		nc := connect(t, e)
		qc := newQueue(t, nc, cfg)
		src := qc.Events()
		cons.Go(func() {
			for {
				mu.Lock()
				done := len(seen) >= n
				mu.Unlock()
				if done || ctx.Err() != nil {
					return
				}
				ds, err := src.Next(ctx, 100, 500*time.Millisecond)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("consumer %d: %v", c, err)
					}
					return
				}
				for _, d := range ds {
					if err := d.Ack(ctx); err != nil {
						t.Errorf("ack: %v", err)
						return
					}
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.Event().MsgID]++
				}
				mu.Unlock()
			}
		})
	}
	pubs.Wait()
	cons.Wait()
	if ctx.Err() != nil {
		t.Fatalf("stalled: consumed %d of %d before the deadline", len(seen), n)
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct events, want %d", len(seen), n)
	}
}

func TestExternalNATS(t *testing.T) {
	t.Parallel()
	natsURL := os.Getenv("ORDERSYNC_TEST_NATS_URL")
	if natsURL == "" {
		t.Skip("ORDERSYNC_TEST_NATS_URL not set (e.g. nats://127.0.0.1:4222): skipping the external NATS test")
	}
	// Against a broken server, not a slow one: the server is shared, and
	// on a loaded machine the whole run took over 5 s.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := Connect(ctx, ConnConfig{URL: natsURL, Name: "ordersync-queue-test"})
	if err != nil {
		t.Fatalf("Connect %s: %v", natsURL, err)
	}
	// Closed after the cleanups registered below have deleted the streams
	// (cleanups run last-in, first-out): a deferred Close ran before them
	// and left every run's streams on the shared server.
	t.Cleanup(nc.Close)
	cfg := uniqueConfig()
	cfg.AckWait = 500 * time.Millisecond
	var qs []*Queue
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			q, err := New(ctx, nc, cfg)
			if err != nil {
				t.Errorf("concurrent New on external NATS: %v", err)
				return
			}
			mu.Lock()
			qs = append(qs, q)
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	q := qs[0]
	t.Cleanup(func() {
		js, _ := jetstream.New(nc)
		js.DeleteStream(context.Background(), cfg.EventsStream)
		js.DeleteStream(context.Background(), cfg.OrdersStream)
	})
	if err := q.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	for i := range 50 {
		if publish(t, q, testEvent(i)) {
			t.Fatalf("event %d reported duplicate", i)
		}
	}
	if !publish(t, q, testEvent(0)) {
		t.Fatal("duplicate MsgID not reported on external NATS")
	}
	src := q.Events()
	ds := next(t, src, 1, time.Second)
	if len(ds) != 1 {
		t.Fatal("no event")
	}
	if err := ds[0].Retry(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	seen := drain(t, ctx, src, 50)
	if len(seen) != 50 {
		t.Fatalf("consumed %d, want 50", len(seen))
	}
	if _, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{{Subject: ordersync.SubjectPaid, MsgID: "paid-1", Payload: []byte(`{}`)}}); err != nil {
		t.Fatalf("publish order event: %v", err)
	}
}

func TestConnectConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		cfg       ConnConfig
		wantField string
	}{
		{"no URL", ConnConfig{}, "URL"},
		{"two auth methods", ConnConfig{URL: "nats://127.0.0.1:1", Token: "x", CredsFile: "y"}, "CredsFile"},
		{"cert without key", ConnConfig{URL: "nats://127.0.0.1:1", TLSCert: "c"}, "TLSKey"},
	}
	for _, tt := range tests {
		_, err := Connect(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.wantField) {
			t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.wantField)
		}
	}
	// Nothing listens there: the first connection fails within ctx.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := Connect(ctx, ConnConfig{URL: "nats://" + addr}); err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
}

// BenchmarkPublishEvent publishes from 64 goroutines over the embedded
// in-process connection, each waiting for its ack.
func BenchmarkPublishEvent(b *testing.B) {
	_, q := embeddedQueue(b, uniqueConfig())
	body := make([]byte, 400)
	for i := range body {
		body[i] = 'x'
	}
	var (
		mu  sync.Mutex
		seq int
	)
	b.SetParallelism(64 / max(1, runtimeProcs()))
	b.ResetTimer()
	cpu := rusage.Start(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			mu.Lock()
			seq++
			i := seq
			mu.Unlock()
			ev := &ordersync.InboundEvent{MsgID: fmt.Sprintf("bench-%d", i), Account: "default", Body: body,
				ReceivedAt: time.Now(), Signature: ordersync.SignatureValid, Cause: ordersync.CauseWebhook}
			if _, err := q.PublishEvent(ctx, ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	cpu.Report(b, b.N, "cpu-µs/msg")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkConsume drains published events in batches of 100 with one
// acknowledgement each.
func BenchmarkConsume(b *testing.B) {
	_, q := embeddedQueue(b, uniqueConfig())
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < b.N; i += 64 {
				if _, err := q.PublishEvent(context.Background(), testEvent(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	src := q.Events()
	ctx := context.Background()
	b.ResetTimer()
	cpu := rusage.Start(b)
	start := time.Now()
	for got := 0; got < b.N; {
		ds, err := src.Next(ctx, 100, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range ds {
			if err := d.Ack(ctx); err != nil {
				b.Fatal(err)
			}
		}
		got += len(ds)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	cpu.Report(b, b.N, "cpu-µs/msg")
}

// TestNextLosesNothingAtItsDeadline: events published while short pulls keep
// expiring are all delivered at once. A pull the client gives up on while
// the server still holds it would take an event with it, to come back only
// after AckWait (20 s here): any event that took a quarter of that fails.
// It runs alone, as TestFetchUnderSaturation does: a pull's answer that
// reaches the client more than a second late is dropped by nats.go, which
// is the loss it looks for, and the package's other tests at once make
// such a delay likelier.
func TestNextLosesNothingAtItsDeadline(t *testing.T) {
	cfg := uniqueConfig()
	cfg.AckWait = 20 * time.Second
	_, q := embeddedQueue(t, cfg)
	src := q.Events()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const events = 500
	var sentAt sync.Map // msg id → time.Time
	var publishing sync.WaitGroup
	defer publishing.Wait()
	publishing.Go(func() {
		for i := range events {
			// Spread the publishes over the pulls' lives, deadlines included:
			// the subject is the server's own pull expiry, so real time.
			time.Sleep(time.Duration(i%7) * time.Millisecond)
			ev := testEvent(i)
			sentAt.Store(ev.MsgID, time.Now())
			if _, err := q.PublishEvent(context.Background(), ev); err != nil {
				t.Errorf("PublishEvent: %v", err)
				return
			}
		}
	})
	var slowest time.Duration
	for got := 0; got < events; {
		ds, err := src.Next(ctx, 10, 2*time.Millisecond)
		if err != nil {
			t.Fatalf("after %d of %d events: Next: %v", got, events, err)
		}
		for _, d := range ds {
			id := d.Event().MsgID
			if at, ok := sentAt.Load(id); ok {
				slowest = max(slowest, time.Since(at.(time.Time)))
			}
			if err := d.Ack(ctx); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
		got += len(ds)
	}
	if slowest > cfg.AckWait/4 {
		t.Errorf("the slowest event took %v from publish to its handing out: a pull dropped it", slowest)
	}
}

// TestReadyProbesOnceAnInterval: /readyz answers anyone, so a flood of
// Ready calls costs one probe write per ProbeEvery, not one each; a call
// after the interval writes again.
func TestReadyProbesOnceAnInterval(t *testing.T) {
	t.Parallel()
	cfg := uniqueConfig()
	cfg.ProbeEvery = time.Hour
	_, q := embeddedQueue(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	writes := func() uint64 {
		t.Helper()
		s, err := q.js.Stream(ctx, q.probeStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	for range 50 {
		if err := q.Ready(ctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
	}
	if n := writes(); n != 1 {
		t.Fatalf("%d probe writes for 50 calls within the interval, want 1", n)
	}
	q.probe.mu.Lock()
	q.probe.at = time.Now().Add(-time.Hour)
	q.probe.mu.Unlock()
	if err := q.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if n := writes(); n != 2 {
		t.Fatalf("%d probe writes after the interval, want 2", n)
	}
}

// TestEventWithoutReceiptTimeTakesTheStreams: an event queued without a
// receipt time reads the stream's time of the message, the same on a
// redelivery, which the event log's key relies on.
func TestEventWithoutReceiptTimeTakesTheStreams(t *testing.T) {
	t.Parallel()
	_, q := embeddedQueue(t, uniqueConfig())
	src := q.Events()
	ev := testEvent(3)
	ev.ReceivedAt = time.Time{}
	before := time.Now()
	publish(t, q, ev)
	ds := next(t, src, 1, time.Second)
	if len(ds) != 1 {
		t.Fatal("no event")
	}
	first := ds[0].Event().ReceivedAt
	if first.Before(before.Add(-time.Second)) || first.After(time.Now()) {
		t.Fatalf("ReceivedAt = %v, want the stream's time of the message (published at %v)", first, before)
	}
	if err := ds[0].Retry(0); err != nil {
		t.Fatal(err)
	}
	ds = next(t, src, 1, 2*time.Second)
	if len(ds) != 1 || ds[0].Attempt() != 2 {
		t.Fatalf("got %d deliveries, want the redelivery", len(ds))
	}
	if again := ds[0].Event().ReceivedAt; !again.Equal(first) {
		t.Fatalf("redelivery's ReceivedAt = %v, want the first delivery's %v", again, first)
	}
	if err := ds[0].Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
}
