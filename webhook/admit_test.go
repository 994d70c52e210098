package webhook

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ordersync/ordersync"
)

// countingPublisher counts the publishes it passes on.
type countingPublisher struct {
	ordersync.EventPublisher
	n atomic.Int64
}

func (p *countingPublisher) PublishEvent(ctx context.Context, ev *ordersync.InboundEvent) (bool, error) {
	p.n.Add(1)
	return p.EventPublisher.PublishEvent(ctx, ev)
}

// TestAdmitRefusesBeforePublishing: while Admit says no (the disk below its
// watermark), a signed webhook is answered 503 with Retry-After and nothing
// is published; once it says yes, the same webhook is accepted.
func TestAdmitRefusesBeforePublishing(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	pub := &countingPublisher{EventPublisher: tq.q}
	var low atomic.Bool
	low.Store(true)
	_, url := startReceiver(t, Config{
		Secrets:   []string{oldSecret},
		Publisher: pub,
		Admit: func() error {
			if low.Load() {
				return errors.New("data directory low on disk space")
			}
			return nil
		},
	})
	created := fixture(t, "webhook-created-captured-shape.json")
	for range 3 {
		res := post(t, "POST", url+Path, created, Sign(oldSecret, created))
		if res.status != 503 || res.retryAfter == "" || res.body != "unavailable" {
			t.Fatalf("below the watermark: answer %+v, want 503 unavailable with Retry-After", res)
		}
	}
	if n := pub.n.Load(); n != 0 {
		t.Fatalf("%d publishes while refusing, want none", n)
	}
	low.Store(false)
	if res := post(t, "POST", url+Path, created, Sign(oldSecret, created)); res.status != 200 || res.body != "accepted" {
		t.Fatalf("above the watermark again: answer %+v, want 200 accepted", res)
	}
	tq.consume(t, 1)
}

// refusingPublisher fails every publish, as a queue that cannot store.
type refusingPublisher struct{}

func (refusingPublisher) PublishEvent(context.Context, *ordersync.InboundEvent) (bool, error) {
	return false, errors.New("nats: timeout")
}

// lineCounter counts the log lines by message, and the occurrences the
// summaries among them sum up.
type lineCounter struct {
	mu       sync.Mutex
	lines    map[string]int
	repeated map[string]int64
}

func (c *lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *lineCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines[r.Message]++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "repeated" {
			c.repeated[r.Message] += a.Value.Int64()
		}
		return true
	})
	return nil
}
func (c *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *lineCounter) WithGroup(string) slog.Handler      { return c }

// TestRefusalFloodLogsOneLinePerInterval: a thousand webhooks refused
// within one interval, by the admission check or by a queue that cannot
// store them, cost one line per cause, and the summary written at Close
// counts the rest; the answers and the metrics count every one.
func TestRefusalFloodLogsOneLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			admit func() error
			msg   string
		}{
			{"not admitted", func() error { return errors.New("low on disk space") }, "webhook refused before publishing; answering 503 so the provider retries"},
			{"not queued", nil, "webhook not queued; answering 503 so the provider retries"},
		} {
			lines := &lineCounter{lines: map[string]int{}, repeated: map[string]int64{}}
			reg := prometheus.NewRegistry()
			rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: refusingPublisher{}, Admit: tt.admit,
				Logger: slog.New(lines), Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			created := fixture(t, "webhook-created-captured-shape.json")
			const n = 1000
			for range n {
				req := httptest.NewRequest("POST", Path, bytes.NewReader(created))
				req.Header.Set(SignatureHeader, Sign(oldSecret, created))
				w := httptest.NewRecorder()
				rc.ServeHTTP(w, req)
				if w.Code != 503 {
					t.Fatalf("%s: answered %d, want 503", tt.name, w.Code)
				}
				time.Sleep(time.Millisecond) // a second of fake time in all, within the interval
			}
			if got := lines.lines[tt.msg]; got != 1 {
				t.Errorf("%s: %d lines for %d refusals within one interval, want 1", tt.name, got, n)
			}
			rc.Close()
			if got, sum := lines.lines[tt.msg], lines.repeated[tt.msg]; got != 2 || sum != n-1 {
				t.Errorf("%s: after Close %d lines summing up %d more refusals, want 2 lines and %d", tt.name, got, sum, n-1)
			}
			if got := testutil.ToFloat64(rc.metrics.requests.WithLabelValues(ordersync.DefaultAccount, "unavailable")); got != n {
				t.Errorf("%s: ordersync_webhook_requests_total{outcome=unavailable} = %v, want %d", tt.name, got, n)
			}
		}
	})
}
