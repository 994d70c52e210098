package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ordersync/ordersync"
)

// memRejections is an in-memory rejection record.
type memRejections struct {
	mu     sync.Mutex
	counts []ordersync.RejectionCount
	calls  int
}

func (m *memRejections) RecordRejections(ctx context.Context, p ordersync.RecordRejectionsParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.counts = append(m.counts, p.Counts...)
	return nil
}

// total sums the counts of reason.
func (m *memRejections) total(reason ordersync.RejectionReason) (n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.counts {
		if c.Reason == reason {
			n += c.Count
		}
	}
	return n
}

// TestRejectedRequestsAreRecorded: a signed body that is not an event gets
// an event log row; requests refused before they could be trusted only add
// to the per-minute counts of their source.
func TestRejectedRequestsAreRecorded(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rec, rej := &memRecorder{}, &memRejections{}
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q, Recorder: rec, Rejections: rej, MaxBodyBytes: 1024,
		Clock: func() time.Time { return time.Date(2026, 10, 10, 18, 0, 30, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(t, rc)
	bad := []byte(`[1,2]`)
	posts := []struct {
		body      []byte
		signature string
		status    int
	}{
		{[]byte(`{"orderId":"1"}`), "", 401},
		{[]byte(`{"orderId":"2"}`), Sign("wrong", []byte(`{"orderId":"2"}`)), 401},
		{[]byte(`{"orderId":"4"}`), Sign("wrong", []byte(`{"orderId":"4"}`)), 401},
		{bad, Sign(oldSecret, bad), 400},
		{bytes.Repeat([]byte("x"), 2000), "", 413},
		{[]byte(`{"orderId":"3","type":"Created"}`), Sign(oldSecret, []byte(`{"orderId":"3","type":"Created"}`)), 200},
	}
	for _, p := range posts {
		if r := post(t, "POST", srv+Path, p.body, p.signature); r.status != p.status {
			t.Fatalf("got %d, want %d", r.status, p.status)
		}
	}
	rc.Close() // flushes
	got := rec.all()
	if len(got) != 1 || got[0].Outcome != ordersync.OutcomeRejected || got[0].Signature != ordersync.SignatureValid ||
		!strings.Contains(got[0].Detail, "malformed") || !strings.HasPrefix(got[0].MsgID, "rejected-") || got[0].ReceivedAt.Hour() != 18 {
		t.Fatalf("event log: %+v, want the one signed malformed body", got)
	}
	want := map[ordersync.RejectionReason]int64{
		ordersync.RejectSignatureMissing: 1, ordersync.RejectSignatureInvalid: 2, ordersync.RejectTooLarge: 1,
	}
	for reason, n := range want {
		if got := rej.total(reason); got != n {
			t.Errorf("%s counted %d, want %d", reason, got, n)
		}
	}
	for _, c := range rej.counts {
		if c.Source != "127.0.0.1" || c.Account != ordersync.DefaultAccount || !c.Minute.Equal(time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)) {
			t.Errorf("count %+v, want source 127.0.0.1, account default, minute 18:00", c)
		}
	}
	if len(rej.counts) != 3 {
		t.Errorf("%d rows, want one per reason: %+v", len(rej.counts), rej.counts)
	}
	if got := testutil.ToFloat64(rc.metrics.recordDropped); got != 0 {
		t.Errorf("dropped %v, want 0", got)
	}
}

// A recorder that hangs never holds up an answer: rejections beyond the
// buffer are dropped and counted.
func TestRecorderNeverBlocksHandler(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rec := &memRecorder{release: make(chan struct{})}
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q, Recorder: rec, RecordBuffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(t, rc)
	const n = 30
	start := time.Now()
	// Signed bodies that are not events: each gets an event log row.
	for i := range n {
		body := []byte(fmt.Sprintf(`[%d]`, i))
		if r := post(t, "POST", srv+Path, body, Sign(oldSecret, body)); r.status != 400 {
			t.Fatalf("got %d, want 400", r.status)
		}
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("%d rejections took %s with a hung recorder", n, took)
	}
	dropped := testutil.ToFloat64(rc.metrics.recordDropped)
	if dropped < n-recordBatch-2 || dropped == 0 {
		t.Fatalf("dropped %v of %d with a buffer of 2", dropped, n)
	}
	close(rec.release)
	rc.Close()
	if recorded := len(rec.all()); recorded+int(dropped) != n {
		t.Fatalf("recorded %d + dropped %v != %d posted", recorded, dropped, n)
	}
	// After Close, rejections are still answered and counted as dropped.
	if r := post(t, "POST", srv+Path, []byte(`[]`), Sign(oldSecret, []byte(`[]`))); r.status != 400 {
		t.Fatalf("after Close: %d", r.status)
	}
}

func TestUnavailableWhenQueueDown(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q, RetryAfter: 1500 * time.Millisecond, PublishTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close) // after the server stops, as Close asks
	srv := newHTTPServer(t, rc)
	body := fixture(t, "webhook-created-captured-shape.json")
	if r := post(t, "POST", srv+Path, body, Sign(oldSecret, body)); r.status != 200 {
		t.Fatalf("before shutdown: %+v", r)
	}
	tq.e.Shutdown()
	start := time.Now()
	other := fixture(t, "webhook-cancelled.json")
	r := post(t, "POST", srv+Path, other, Sign(oldSecret, other))
	if r.status != http.StatusServiceUnavailable || r.body != "unavailable" || r.retryAfter != "2" {
		t.Fatalf("with JetStream down: %+v, want 503 unavailable with Retry-After 2", r)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("503 took %s, want within the publish timeout", took)
	}
	if got := outcomeCount(rc, outcomeUnavailable); got != 1 {
		t.Fatalf("requests_total{outcome=unavailable} = %v", got)
	}
}

// Nothing answered 200 is lost when the process restarts: post over real
// HTTP, stop the embedded server, start it again on the same directory, and
// every accepted webhook is there to consume.
func TestNothingAnsweredOKIsLost(t *testing.T) {
	const n = 400
	dir := t.TempDir()
	cfg := queueConfig()
	tq := startQueue(t, dir, cfg)
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close) // after the server stops, as Close asks
	srv := newHTTPServer(t, rc)
	var (
		mu       sync.Mutex
		accepted = map[string]bool{}
		wg       sync.WaitGroup
	)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				body := []byte(fmt.Sprintf(`{"orderId":"%d","orderReference":"ped_%d","orderType":"FASTLINK_CHARGE","type":"SuccessPayment"}`, 30000+i, i))
				if r := post(t, "POST", srv+Path, body, Sign(oldSecret, body)); r.status == 200 {
					mu.Lock()
					accepted[string(body)] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(accepted) != n {
		t.Fatalf("%d of %d accepted with the queue up", len(accepted), n)
	}
	tq.e.Shutdown()

	restarted := startQueue(t, dir, cfg)
	for _, ev := range restarted.consume(t, n) {
		delete(accepted, string(ev.Body))
	}
	if len(accepted) != 0 {
		t.Fatalf("%d webhooks answered 200 were lost across the restart", len(accepted))
	}
}

func newHTTPServer(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptestServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A body without Content-Length (chunked) is read up to the limit too.
func TestChunkedBody(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close) // after the server stops, as Close asks
	srv := newHTTPServer(t, rc)
	tests := []struct {
		name       string
		body       []byte
		wantStatus int
	}{
		{"small", fixture(t, "webhook-successpayment-rich-metadata.json"), 200},
		{"over the limit", append([]byte(`{"orderId":"1","description":"`), bytes.Repeat([]byte("x"), 5000)...), 413},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(http.MethodPost, srv+Path, io.MultiReader(bytes.NewReader(tt.body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(SignatureHeader, Sign(oldSecret, tt.body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.wantStatus {
			t.Errorf("%s: %d, want %d", tt.name, res.StatusCode, tt.wantStatus)
		}
		if req.ContentLength != 0 { // 0 with a body: length unknown, sent chunked
			t.Fatalf("%s: request has Content-Length %d, want it sent chunked", tt.name, req.ContentLength)
		}
	}
	if got := tq.consume(t, 1); string(got[0].Body) != string(tests[0].body) {
		t.Fatalf("queued body differs from the chunked one")
	}
}

// TestRejectionSourcesCapped: however many sources a minute brings, it gets
// at most RejectionSourcesPerMinute rows; the rest are counted as "other".
func TestRejectionSourcesCapped(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rej := &memRejections{}
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q, Rejections: rej,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Clock:          func() time.Time { return time.Date(2026, 10, 10, 18, 0, 30, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(t, rc)
	const sources = 250
	for i := range sources {
		req, err := http.NewRequest("POST", srv+Path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d, 10.%d.0.1", i%200, i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	rc.Close()
	rows := map[string]int64{}
	for _, c := range rej.counts {
		rows[c.Source] += c.Count
	}
	if len(rows) != rc.cfg.RejectionSourcesPerMinute+1 || rows[ordersync.RejectionSourceOther] != sources-int64(rc.cfg.RejectionSourcesPerMinute) {
		t.Fatalf("%d sources recorded, %d as other; want %d and %d", len(rows), rows[ordersync.RejectionSourceOther],
			rc.cfg.RejectionSourcesPerMinute+1, sources-rc.cfg.RejectionSourcesPerMinute)
	}
}
