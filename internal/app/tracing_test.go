package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/tracing"
)

// hookHeaders is an endpoint that answers 200 and keeps each request's
// traceparent header ("" when it had none).
type hookHeaders struct {
	mu     sync.Mutex
	traces []string
}

func (h *hookHeaders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, has := r.Header[http.CanonicalHeaderKey(tracing.Header)]
	if has {
		h.traces = append(h.traces, r.Header.Get(tracing.Header))
	} else {
		h.traces = append(h.traces, "")
	}
	w.WriteHeader(http.StatusOK)
}

func (h *hookHeaders) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.traces...)
}

// payAndDeliver starts a stack with one endpoint taking order.paid, has a
// buyer pay a link created through the admin API, and returns the
// traceparents of the endpoint's requests once the PAID arrived.
func payAndDeliver(t *testing.T, tracer *tracing.Tracer) []string {
	t.Helper()
	hook := &hookHeaders{}
	srv := httptest.NewServer(hook)
	t.Cleanup(srv.Close)
	st := startTestStack(t, StackOptions{Configure: func(c *Config) {
		c.tracer = tracer
		// The reconciler off: its first checks of a new order, moments
		// after the stack starts, can find the payment before the
		// webhook's fetch does, and the PAID it records carries no
		// webhook's trace.
		c.ReconcileRPS = 0
		c.Endpoints = []EndpointConfig{{ID: "erp", URL: srv.URL,
			Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: []string{string(ordersync.HookOrderPaid)}}}
	}})
	ctx := context.Background()
	amount := ordersync.MustAmount("12.50")
	var link ordersync.PaymentLinkResult
	c := &admin.Client{BaseURL: st.Program.AdminURL()}
	if err := c.Do(ctx, http.MethodPost, "/v1/payment-links", ordersync.PaymentLinkParams{Amount: &amount}, &link); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sim.Pay(link.OrderCode, ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "a delivery of "+link.OrderCode+"'s PAID", func() bool { return len(hook.received()) > 0 })
	return hook.received()
}

// TestTraceFollowsTheWebhook: with tracing on, a payment's webhook makes
// one trace through the whole pipeline, real SQLite and the embedded
// JetStream: receive, then publish, fetch, apply, relay and deliver, each
// the child of the one before, and the endpoint gets the deliver span's
// traceparent.
func TestTraceFollowsTheWebhook(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tracer := tracing.NewWithExporter(tracing.Config{SampleRatio: 1}, exp)
	t.Cleanup(func() { _ = tracer.Shutdown(context.Background()) })
	traces := payAndDeliver(t, tracer)
	if len(traces) != 1 || traces[0] == "" {
		t.Fatalf("the endpoint's requests carried traceparents %q, want one", traces)
	}

	// The deliver span ends, and is exported, once the dispatcher has read
	// the endpoint's answer: after the endpoint saw the request.
	var spans tracetest.SpanStubs
	var deliver *tracetest.SpanStub
	testenv.WaitFor(t, 10*time.Second, "the deliver span", func() bool {
		spans = exp.GetSpans()
		for i := range spans {
			if spans[i].Name == tracing.SpanDeliver {
				deliver = &spans[i]
			}
		}
		return deliver != nil
	})
	if want := "00-" + deliver.SpanContext.TraceID().String() + "-" + deliver.SpanContext.SpanID().String() + "-01"; traces[0] != want {
		t.Errorf("the delivery's traceparent = %q, want the deliver span's %q", traces[0], want)
	}
	// Walk up from the delivery: each parent is the hop before, in one trace.
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.SpanContext.TraceID() == deliver.SpanContext.TraceID() {
			byID[s.SpanContext.SpanID().String()] = s
		}
	}
	var chain []string
	for s, ok := *deliver, true; ok; s, ok = byID[s.Parent.SpanID().String()] {
		chain = append([]string{s.Name}, chain...)
	}
	want := []string{tracing.SpanReceive, tracing.SpanPublish, tracing.SpanFetch, tracing.SpanApply, tracing.SpanRelay, tracing.SpanDeliver}
	if len(chain) != len(want) {
		t.Fatalf("the delivery's trace from its root = %q, want %q", chain, want)
	}
	for i := range want {
		if chain[i] != want[i] {
			t.Fatalf("the delivery's trace from its root = %q, want %q", chain, want)
		}
	}
}

// TestTracingOffSendsNoTraceparent: with tracing off (the default), a
// delivery carries no traceparent header.
func TestTracingOffSendsNoTraceparent(t *testing.T) {
	if traces := payAndDeliver(t, nil); len(traces) != 1 || traces[0] != "" {
		t.Fatalf("the endpoint's requests carried traceparents %q, want none", traces)
	}
}
