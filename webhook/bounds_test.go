package webhook

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
)

// gauge reads a gauge or counter of reg by name; -1 when it is missing.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			if m.Gauge != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// stall opens a connection and sends a POST announcing contentLength bytes
// of which it sends only sent; the connection stays open until cleanup.
func stall(t *testing.T, url string, contentLength, sent int) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
		Path, addr, SignatureHeader, Sign("wrong", nil), contentLength)
	if _, err := c.Write(bytes.Repeat([]byte(" "), sent)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDefaultBodyLimit: at the default settings a body over 64 KiB is
// refused before its signature is checked, however well signed.
func TestDefaultBodyLimit(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	_, url := startReceiver(t, Config{Secrets: []string{oldSecret}, Publisher: tq.q})
	body := []byte(`{"orderId":"1","type":"Created","pad":"` + strings.Repeat("x", 64<<10) + `"}`)
	if r := post(t, "POST", url+Path, body, Sign(oldSecret, body)); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a signed body of %d bytes: %d %s, want 413", len(body), r.status, r.body)
	}
}

// TestBodyBufferGrowsAsBytesArrive: requests that announce a large body
// and send little hold buffers for what they sent, not what they announced.
func TestBodyBufferGrowsAsBytesArrive(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	reg := prometheus.NewRegistry()
	_, url := startReceiver(t, Config{Secrets: []string{oldSecret}, Publisher: tq.q, Registerer: reg})
	const conns = 50
	var first net.Conn
	for i := range conns {
		c := stall(t, url, 60<<10, 100)
		if i == 0 {
			first = c
		}
	}
	// Every request is reading: each holds its first 512-byte buffer.
	testenv.WaitFor(t, 20*time.Second, "every stalled body read", func() bool {
		return gauge(t, reg, "ordersync_webhook_body_buffer_bytes") == conns*512
	})
	// The bytes that fill one request's buffer double that buffer, and
	// only that one: the others, sent nothing more, keep theirs.
	if _, err := first.Write(bytes.Repeat([]byte(" "), 512-100)); err != nil {
		t.Fatal(err)
	}
	want := float64((conns-1)*512 + 1024)
	testenv.WaitFor(t, 20*time.Second, "the filled buffer grown", func() bool {
		return gauge(t, reg, "ordersync_webhook_body_buffer_bytes") >= want
	})
	if got := gauge(t, reg, "ordersync_webhook_body_buffer_bytes"); got != want {
		t.Fatalf("%d stalled requests, one of them sent 512 bytes: %v bytes held, want %v", conns, got, want)
	}
}

// TestBodyBudget: connections holding large unverified bodies spend the
// budget of body bytes in flight; a large body finding it spent is
// answered 503 with Retry-After, while a real (small) webhook still gets
// through; once the connections go, the bytes are released.
func TestBodyBudget(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	reg := prometheus.NewRegistry()
	_, url := startReceiver(t, Config{Secrets: []string{oldSecret}, Publisher: tq.q, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	// Each holds a 64 KiB buffer, 56 KiB of it from the 8 MiB budget: 146
	// fit, the rest are turned away.
	var conns []net.Conn
	for range 170 {
		conns = append(conns, stall(t, url, 64<<10, 60<<10))
	}
	testenv.WaitFor(t, 20*time.Second, "the budget spent", func() bool {
		return gauge(t, reg, "ordersync_webhook_requests_total", "outcome", "busy") >= 170-146
	})
	large := []byte(`{"orderId":"9","pad":"` + strings.Repeat("x", 40<<10) + `"}`)
	r := post(t, "POST", url+Path, large, Sign(oldSecret, large))
	if r.status != http.StatusServiceUnavailable || r.body != "busy" || r.retryAfter != "5" {
		t.Fatalf("a large body with the budget spent: %+v, want 503 busy with Retry-After 5", r)
	}
	small := fixture(t, "webhook-created-captured-shape.json")
	if r := post(t, "POST", url+Path, small, Sign(oldSecret, small)); r.status != http.StatusOK {
		t.Fatalf("a real webhook with the budget spent: %+v, want 200", r)
	}
	if held := gauge(t, reg, "ordersync_webhook_body_buffer_bytes"); held > 146*(64<<10)+24*(32<<10) {
		t.Fatalf("%v bytes held, over the bound", held)
	}
	for _, c := range conns {
		c.Close()
	}
	testenv.WaitFor(t, 20*time.Second, "the bytes released", func() bool {
		return gauge(t, reg, "ordersync_webhook_body_buffer_bytes") == 0
	})
}

// warnRecorder keeps the WARN records logged.
type warnRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (w *warnRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnRecorder) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.records = append(w.records, r.Clone())
	return nil
}
func (w *warnRecorder) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnRecorder) WithGroup(string) slog.Handler      { return w }

// TestSignatureRejectionsLoggedAtWarn: rejected signatures are loud at the
// default level, and a burst of them is one summary line with the counts
// and the last source, not a line each.
func TestSignatureRejectionsLoggedAtWarn(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	logs := &warnRecorder{}
	rc, url := startReceiver(t, Config{Secrets: []string{oldSecret}, Publisher: tq.q, Logger: slog.New(logs)})
	body := []byte(`{"orderId":"1","type":"Created"}`)
	for range 30 {
		post(t, "POST", url+Path, body, Sign("an-old-secret", body))
	}
	for range 20 {
		post(t, "POST", url+Path, body, "")
	}
	rc.Close()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.records) != 1 {
		t.Fatalf("%d WARN lines for 50 rejections, want one summary", len(logs.records))
	}
	attrs := map[string]string{}
	logs.records[0].Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	want := map[string]string{
		"count": "50", string(ordersync.RejectSignatureInvalid): "30", string(ordersync.RejectSignatureMissing): "20",
		"last_source": "127.0.0.1", "last_account": ordersync.DefaultAccount,
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("summary %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
}
