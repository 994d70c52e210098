package webhook

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/queue"
)

const (
	oldSecret   = "b2xkLXNlY3JldC1vZi10aGUtbWVyY2hhbnQtcG9ydGFsLQ=="
	newSecret   = "bmV3LXNlY3JldC1vZi10aGUtbWVyY2hhbnQtcG9ydGFsLQ=="
	shop2Secret = "c2hvcDItc2VjcmV0LW9mLXRoZS1tZXJjaGFudC1wb3J0YWw="
)

var streamSeq struct {
	sync.Mutex
	n int
}

// queueConfig names the streams uniquely within the test binary.
func queueConfig() queue.Config {
	streamSeq.Lock()
	defer streamSeq.Unlock()
	streamSeq.n++
	return queue.Config{
		SubjectPrefix: fmt.Sprintf("wh%d", streamSeq.n),
		EventsStream:  fmt.Sprintf("WH%d_EVENTS", streamSeq.n),
		OrdersStream:  fmt.Sprintf("WH%d_ORDERS", streamSeq.n),
		AckWait:       5 * time.Second,
	}
}

// testQueue is a real embedded JetStream in dir, in-process only.
type testQueue struct {
	dir string
	cfg queue.Config
	e   *queue.Embedded
	q   *queue.Queue
}

func startQueue(t testing.TB, dir string, cfg queue.Config) *testQueue {
	t.Helper()
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.Shutdown)
	nc, err := e.Connect("webhook-test")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := queue.New(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("queue.New: %v", err)
	}
	return &testQueue{dir: dir, cfg: cfg, e: e, q: q}
}

// consume takes and acknowledges events until n arrived or the deadline.
func (tq *testQueue) consume(t testing.TB, n int) []*ordersync.InboundEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src := tq.q.Events()
	var out []*ordersync.InboundEvent
	for len(out) < n {
		ds, err := src.Next(ctx, 100, 200*time.Millisecond)
		if err != nil {
			t.Fatalf("consumed %d of %d: %v", len(out), n, err)
		}
		for _, d := range ds {
			out = append(out, d.Event())
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// startReceiver serves a Receiver on a real loopback HTTP server.
func startReceiver(t testing.TB, cfg Config) (*Receiver, string) {
	t.Helper()
	rc, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(rc)
	t.Cleanup(func() {
		srv.Close()
		rc.Close()
	})
	return rc, srv.URL
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type response struct {
	status     int
	body       string
	allow      string
	retryAfter string
}

func post(t testing.TB, method, url string, body []byte, signature string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(SignatureHeader, signature)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var parsed struct{ Status string }
	if err := json.Unmarshal(b, &parsed); err != nil {
		t.Fatalf("answer %d is not JSON: %q", res.StatusCode, b)
	}
	return response{res.StatusCode, parsed.Status, res.Header.Get("Allow"), res.Header.Get("Retry-After")}
}

// memRecorder is an in-memory event log.
type memRecorder struct {
	mu      sync.Mutex
	records []ordersync.EventRecord
	calls   int
	release chan struct{} // when set, RecordEvents waits for it
}

func (m *memRecorder) RecordEvents(ctx context.Context, events []ordersync.EventRecord) error {
	if m.release != nil {
		select {
		case <-m.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.records = append(m.records, events...)
	return nil
}

func (m *memRecorder) all() []ordersync.EventRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ordersync.EventRecord(nil), m.records...)
}

func TestNewConfigErrors(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no secret", Config{Publisher: tq.q}, "webhook secret"},
		{"empty secret", Config{Publisher: tq.q, Secrets: []string{" "}}, "webhook secret (Secrets)[0] is empty"},
		{"no publisher", Config{Secrets: []string{oldSecret}}, "Publisher"},
		{"account without secret", Config{Publisher: tq.q, Secrets: []string{oldSecret}, Accounts: map[string]AccountConfig{"shop2": {}}}, `webhook secret of account "shop2"`},
		{"account name with slash", Config{Publisher: tq.q, Secrets: []string{oldSecret}, Accounts: map[string]AccountConfig{"a/b": {Secrets: []string{"x"}}}}, `Accounts["a/b"]`},
		{"account named default", Config{Publisher: tq.q, Secrets: []string{oldSecret}, Accounts: map[string]AccountConfig{"default": {Secrets: []string{"x"}}}}, `Accounts["default"]`},
		{"negative body limit", Config{Publisher: tq.q, Secrets: []string{oldSecret}, MaxBodyBytes: -1}, "MaxBodyBytes"},
		{"budget below one body", Config{Publisher: tq.q, Secrets: []string{oldSecret}, MaxBodyBytes: 1 << 20, MaxBodyBytesInFlight: 1 << 10}, "MaxBodyBytesInFlight"},
		{"rejection rows below two minutes", Config{Publisher: tq.q, Secrets: []string{oldSecret}, RejectionMaxRows: 100, RejectionSourcesPerMinute: 100}, "RejectionMaxRows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := New(tt.cfg)
			if err == nil {
				rc.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestInsecureModeWarnsAndAcceptsUnsigned(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	var logs bytes.Buffer
	_, url := startReceiver(t, Config{
		Publisher: tq.q, Insecure: true,
		Accounts: map[string]AccountConfig{"signed": {Secrets: []string{shop2Secret}}},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "NOT verified") ||
		!strings.Contains(logs.String(), "default") || strings.Contains(logs.String(), "signed") {
		t.Fatalf("want one loud WARN naming the unsigned account only, got:\n%s", logs.String())
	}
	body := fixture(t, "webhook-created-captured-shape.json")
	if r := post(t, http.MethodPost, url+Path, body, ""); r.status != 200 || r.body != "accepted" {
		t.Fatalf("unsigned webhook in insecure mode: %+v", r)
	}
	// An account with a secret is still verified.
	if r := post(t, http.MethodPost, url+Path+"/signed", body, ""); r.status != 401 {
		t.Fatalf("unsigned webhook to a signed account: %+v", r)
	}
	evs := tq.consume(t, 1)
	if evs[0].Signature != ordersync.SignatureInsecure {
		t.Fatalf("queued signature verdict %q, want %q", evs[0].Signature, ordersync.SignatureInsecure)
	}
}

func TestSignVerify(t *testing.T) {
	body := []byte(`{"orderId":"22805","type":"Created"}`)
	sig := Sign(oldSecret, body)
	raw := mac(oldSecret, body)
	tests := []struct {
		name    string
		secrets []string
		header  string
		body    []byte
		want    ordersync.SignatureVerdict
	}{
		{"base64", []string{oldSecret}, sig, body, ordersync.SignatureValid},
		{"base64 with spaces", []string{oldSecret}, " " + sig + " ", body, ordersync.SignatureValid},
		{"base64 unpadded", []string{oldSecret}, strings.TrimRight(sig, "="), body, ordersync.SignatureValid},
		{"base64 url-safe", []string{oldSecret}, strings.NewReplacer("+", "-", "/", "_").Replace(sig), body, ordersync.SignatureValid},
		{"hex lower", []string{oldSecret}, hex.EncodeToString(raw), body, ordersync.SignatureValid},
		{"hex upper", []string{oldSecret}, strings.ToUpper(hex.EncodeToString(raw)), body, ordersync.SignatureValid},
		{"second secret of a rotation", []string{newSecret, oldSecret}, sig, body, ordersync.SignatureValid},
		{"other secret", []string{newSecret}, sig, body, ordersync.SignatureInvalid},
		{"body changed", []string{oldSecret}, sig, append([]byte(" "), body...), ordersync.SignatureInvalid},
		{"missing", []string{oldSecret}, "", body, ordersync.SignatureMissing},
		{"blank", []string{oldSecret}, "   ", body, ordersync.SignatureMissing},
		{"garbage", []string{oldSecret}, "not a signature", body, ordersync.SignatureInvalid},
		{"truncated", []string{oldSecret}, sig[:20], body, ordersync.SignatureInvalid},
		{"no secrets", nil, sig, body, ordersync.SignatureInvalid},
		{"empty secret", []string{""}, Sign("", body), body, ordersync.SignatureInvalid},
	}
	for _, tt := range tests {
		if got := Verify(tt.secrets, tt.header, tt.body); got != tt.want {
			t.Errorf("%s: Verify = %q, want %q", tt.name, got, tt.want)
		}
	}
	if len(sig) != 44 {
		t.Errorf("Sign gave %d characters, want 44 (standard base64 of 32 bytes)", len(sig))
	}
}

func TestReceiverAnswers(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	reg := prometheus.NewRegistry()
	rec := &memRecorder{}
	rc, url := startReceiver(t, Config{
		Secrets:      []string{newSecret, oldSecret},
		Accounts:     map[string]AccountConfig{"shop2": {Secrets: []string{shop2Secret}}},
		Publisher:    tq.q,
		Recorder:     rec,
		MaxBodyBytes: 64 << 10,
		Registerer:   reg,
	})
	created := fixture(t, "webhook-created-captured-shape.json")
	paid := fixture(t, "webhook-successpayment-rich-metadata.json")
	cancelled := fixture(t, "webhook-cancelled.json")
	coupon := fixture(t, "webhook-other-product-coupon-app.json")
	subscription := []byte(`{"subscriptionId":"901","orderType":"FASTLINK_CHARGE","type":"SubscriptionPayment"}`)
	deep := []byte(`{"metadata":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`)
	sign := func(b []byte) string { return Sign(oldSecret, b) }

	type queued struct {
		account string
		ignored ordersync.IgnoreReason
	}
	tests := []struct {
		name       string
		method     string
		path       string
		body       []byte
		signature  string
		wantStatus int
		wantBody   string
		want       outcome
		queued     *queued // the event the queue must hold afterwards
	}{
		{"created: accepted", "POST", Path, created, sign(created), 200, "accepted", outcomeAccepted, &queued{"default", ""}},
		{"same body again: duplicate", "POST", Path, created, sign(created), 200, "duplicate", outcomeDuplicate, nil},
		{"rich metadata, new secret of the rotation", "POST", Path, paid, Sign(newSecret, paid), 200, "accepted", outcomeAccepted, &queued{"default", ""}},
		{"hex signature", "POST", Path + "/", cancelled, hex.EncodeToString(mac(oldSecret, cancelled)), 200, "accepted", outcomeAccepted, &queued{"default", ""}},
		{"other product: ignored but queued", "POST", Path, coupon, sign(coupon), 200, "ignored", outcomeIgnored, &queued{"default", ordersync.IgnoreOtherProduct}},
		{"subscription: ignored but queued", "POST", Path, subscription, sign(subscription), 200, "ignored", outcomeIgnored, &queued{"default", ordersync.IgnoreSubscription}},
		{"extra account", "POST", Path + "/shop2", created, Sign(shop2Secret, created), 200, "accepted", outcomeAccepted, &queued{"shop2", ""}},
		{"extra account with the default secret", "POST", Path + "/shop2", paid, sign(paid), 401, "unauthorized", outcomeUnauthorized, nil},
		{"signature missing", "POST", Path, paid, "", 401, "unauthorized", outcomeUnauthorized, nil},
		{"signature of another secret", "POST", Path, paid, Sign("someone-else", paid), 401, "unauthorized", outcomeUnauthorized, nil},
		{"signature of another body", "POST", Path, paid, sign(created), 401, "unauthorized", outcomeUnauthorized, nil},
		{"GET", "GET", Path, nil, "", 405, "method_not_allowed", outcomeMethodNotAllowed, nil},
		{"PUT", "PUT", Path, created, sign(created), 405, "method_not_allowed", outcomeMethodNotAllowed, nil},
		{"too large", "POST", Path, bytes.Repeat([]byte(" "), 64<<10+1), "", 413, "too_large", outcomeTooLarge, nil},
		{"not JSON", "POST", Path, []byte("orderId=1"), sign([]byte("orderId=1")), 400, "bad_request", outcomeBadRequest, nil},
		{"JSON but not an object", "POST", Path, []byte(`[{"orderId":"1"}]`), sign([]byte(`[{"orderId":"1"}]`)), 400, "bad_request", outcomeBadRequest, nil},
		{"empty body", "POST", Path, []byte{}, sign([]byte{}), 400, "bad_request", outcomeBadRequest, nil},
		{"truncated", "POST", Path, created[:40], sign(created[:40]), 400, "bad_request", outcomeBadRequest, nil},
		{"not UTF-8", "POST", Path, []byte("{\"orderId\":\"1\",\"description\":\"\xff\xfe\"}"), sign([]byte("{\"orderId\":\"1\",\"description\":\"\xff\xfe\"}")), 400, "bad_request", outcomeBadRequest, nil},
		{"nested 20000 deep", "POST", Path, deep, sign(deep), 400, "bad_request", outcomeBadRequest, nil},
		{"orderId an object", "POST", Path, []byte(`{"orderId":{}}`), sign([]byte(`{"orderId":{}}`)), 400, "bad_request", outcomeBadRequest, nil},
		{"unknown account", "POST", Path + "/nobody", created, sign(created), 404, "unknown_account", outcomeUnknownAccount, nil},
		{"nested account path", "POST", Path + "/shop2/x", created, sign(created), 404, "unknown_account", outcomeUnknownAccount, nil},
		{"other path", "POST", "/webhooks/paymentlinks", created, sign(created), 404, "unknown_account", outcomeUnknownAccount, nil},
	}
	var wantQueued []queued
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := outcomeCount(rc, tt.want)
			r := post(t, tt.method, url+tt.path, tt.body, tt.signature)
			if r.status != tt.wantStatus || r.body != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", r.status, r.body, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus == 405 && r.allow != "POST" {
				t.Fatalf("405 with Allow %q, want POST", r.allow)
			}
			if got := outcomeCount(rc, tt.want) - before; got != 1 {
				t.Fatalf("requests_total{outcome=%s} grew by %v, want 1", outcomeNames[tt.want], got)
			}
			if tt.queued != nil {
				wantQueued = append(wantQueued, *tt.queued)
			}
		})
	}
	// The handler is still up after every kind of bad input.
	if r := post(t, "POST", url+Path, paid, sign(paid)); r.status != 200 || r.body != "duplicate" {
		t.Fatalf("after the bad inputs: %+v", r)
	}

	got := tq.consume(t, len(wantQueued))
	if extra := tq.consume(t, 0); len(extra) != 0 {
		t.Fatalf("%d unexpected events queued", len(extra))
	}
	for i, ev := range got {
		w := wantQueued[i]
		if ev.Account != w.account || ev.Ignored != w.ignored || ev.Signature != ordersync.SignatureValid ||
			ev.Cause != ordersync.CauseWebhook || ev.ReceivedAt.IsZero() || ev.MsgID != MsgID(ev.Account, ev.Body) {
			t.Errorf("queued event %d: %+v, want account %s ignored %q", i, ev, w.account, w.ignored)
		}
		// The receiver's parse travels with the event: the pool reads it
		// instead of parsing the body again.
		if parsed, err := ordersync.ParseEvent(ev.Body); err != nil || ev.Event == nil || *ev.Event != *parsed {
			t.Errorf("queued event %d carries the parse %+v, want %+v (%v)", i, ev.Event, parsed, err)
		}
	}

	if got := testutil.ToFloat64(rc.metrics.signatureMissing); got != 1 {
		t.Errorf("signature_failures_total{reason=missing} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(rc.metrics.signatureInvalid); got != 3 {
		t.Errorf("signature_failures_total{reason=invalid} = %v, want 3", got)
	}
	if got := testutil.ToFloat64(rc.metrics.ignoredBy[ordersync.IgnoreOtherProduct]); got != 1 {
		t.Errorf("ignored_total{reason=other_product} = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "ordersync_webhook_publish_duration_seconds"); err != nil || n != 1 {
		t.Errorf("publish duration histogram: %d series, %v", n, err)
	}
}

func httptestServer(h http.Handler) *httptest.Server { return httptest.NewServer(h) }

// outcomeCount sums an outcome's requests over every account label.
func outcomeCount(rc *Receiver, o outcome) float64 {
	sum := testutil.ToFloat64(rc.unknown.requests[o])
	for _, a := range rc.accounts {
		sum += testutil.ToFloat64(a.requests[o])
	}
	return sum
}

// slowPublisher holds each publish for delay before passing it on.
type slowPublisher struct {
	ordersync.EventPublisher
	delay time.Duration
}

func (p slowPublisher) PublishEvent(ctx context.Context, ev *ordersync.InboundEvent) (bool, error) {
	time.Sleep(p.delay) // the publish's duration is what PublishWait measures
	return p.EventPublisher.PublishEvent(ctx, ev)
}

// TestPublishWait: PublishWait reports the mean wait of the webhooks
// published since its last call, and how many; rejected requests publish
// nothing and do not count.
func TestPublishWait(t *testing.T) {
	const delay = 5 * time.Millisecond
	tq := startQueue(t, t.TempDir(), queueConfig())
	rc, url := startReceiver(t, Config{Secrets: []string{oldSecret}, Publisher: slowPublisher{tq.q, delay}})
	if wait, n := rc.PublishWait(); wait != 0 || n != 0 {
		t.Fatalf("PublishWait before any webhook = %v, %d; want 0, 0", wait, n)
	}
	for i := range 4 {
		body := fmt.Appendf(nil, `{"orderId":"%d","orderType":"FASTLINK_CHARGE","type":"Created"}`, i+1)
		if r := post(t, http.MethodPost, url+Path, body, Sign(oldSecret, body)); r.status != http.StatusOK {
			t.Fatalf("webhook %d answered %d", i, r.status)
		}
	}
	body := []byte(`{"orderId":"9","type":"Created"}`)
	if r := post(t, http.MethodPost, url+Path, body, Sign("wrong", body)); r.status != http.StatusUnauthorized {
		t.Fatalf("badly signed webhook answered %d", r.status)
	}
	wait, n := rc.PublishWait()
	if n != 4 || wait < delay || wait > 50*delay {
		t.Errorf("PublishWait = %v over %d webhooks; want 4 webhooks of about %v", wait, n, delay)
	}
	if wait, n := rc.PublishWait(); wait != 0 || n != 0 {
		t.Errorf("PublishWait again = %v, %d; want 0, 0: each call starts a new window", wait, n)
	}
}
