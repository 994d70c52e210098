package tracing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/retry"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestOffCostsNothing holds the promise the hot path's hooks rely on: the
// nil Tracer starts, names and ends spans without allocating, and hands
// the next hop no traceparent.
func TestOffCostsNothing(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, sp := tr.Start(ctx, SpanFetch, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		if sp.TraceParent() != "" || c != ctx {
			t.Fatal("tracing off handed on a trace")
		}
		sp.SetAttribute("order_code", "x")
		sp.End(nil)
	})
	if allocs != 0 {
		t.Fatalf("allocations with tracing off = %v, want 0", allocs)
	}
	if tr, err := New(ctx, Config{SampleRatio: 1}); tr != nil || err != nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, nil", tr, err)
	}
}

// TestChildOfCarriedParent checks a traceparent carried from one hop makes
// the next hop's span its child in the same trace.
func TestChildOfCarriedParent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewWithExporter(Config{SampleRatio: 1}, exp)
	defer tr.Shutdown(context.Background())

	_, first := tr.Start(context.Background(), SpanPublish, "")
	carried := first.TraceParent()
	first.End(nil)
	if !strings.HasPrefix(carried, "00-") || !strings.HasSuffix(carried, "-01") {
		t.Fatalf("traceparent = %q, want a sampled W3C traceparent", carried)
	}
	_, next := tr.Start(context.Background(), SpanFetch, carried)
	next.End(errors.New("upstream down"))

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("spans = %d, want 2", len(spans))
	}
	if spans[1].Parent.SpanID() != spans[0].SpanContext.SpanID() || spans[1].SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
		t.Fatalf("fetch's parent = %v, want the publish span %v", spans[1].Parent, spans[0].SpanContext)
	}
	if spans[1].Status.Description != "upstream down" {
		t.Fatalf("fetch's status = %+v, want the error", spans[1].Status)
	}
}

// TestExportsOverOTLPHTTP sends spans to a local OTLP/HTTP endpoint and
// reads them back from the protobuf the exporter posted to /v1/traces.
func TestExportsOverOTLPHTTP(t *testing.T) {
	var (
		mu    sync.Mutex
		names []string
		paths []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("unmarshal export request (%s): %v", r.Header.Get("Content-Type"), err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" && a.Value.GetStringValue() != "ordersync-test" {
					t.Errorf("service.name = %q", a.Value.GetStringValue())
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	ctx := context.Background()
	tr, err := New(ctx, Config{Endpoint: srv.URL, SampleRatio: 1, ServiceName: "ordersync-test"})
	if err != nil {
		t.Fatal(err)
	}
	c, receive := tr.Start(ctx, SpanReceive, "")
	_, publish := tr.Start(c, SpanPublish, "")
	publish.End(nil)
	receive.End(nil)
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(names, ",") != "publish,receive" {
		t.Fatalf("exported spans = %q, want publish,receive", names)
	}
	for _, p := range paths {
		if p != "/v1/traces" {
			t.Fatalf("posted to %q, want /v1/traces", p)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{SampleRatio: 1.5}, "tracing_sample_ratio"},
		{Config{Endpoint: "collector:4318", SampleRatio: 1, ServiceName: "s"}, "tracing_endpoint"},
		{Config{Endpoint: "http://collector:4318", SampleRatio: 1}, "tracing_service_name"},
		{Config{Endpoint: "https://collector:4318/v1/traces", SampleRatio: 0.1, ServiceName: "s"}, ""},
	} {
		err := tc.cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

// TestOTLPHeadersFromEnvironment reads the SDK's header variables as the
// SDK does: the traces variable over the general one, values unescaped,
// and an entry without a key or with a bad escape left out.
func TestOTLPHeadersFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want map[string]string
	}{
		{nil, map[string]string{}},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20t0k, X-Team = shop ,=x,noequals,bad=%zz"},
			map[string]string{"Authorization": "Bearer t0k", "X-Team": "shop"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "A=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "B=2"},
			map[string]string{"B": "2"}},
	} {
		got := otlpHeaders(func(k string) string { return tc.env[k] })
		if !maps.Equal(got, tc.want) {
			t.Errorf("headers of %v = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// TestOTLPExportRetries holds the exporter's answers to a collector: a
// 503 is sent again (with the headers each time) until it is taken, a
// 400 is given up at once with the collector's reason, and a 503 past
// the policy's last attempt is given up.
func TestOTLPExportRetries(t *testing.T) {
	var (
		mu      sync.Mutex
		answers []int
		seen    []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type"))
		code := answers[0]
		answers = answers[1:]
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(code)
		io.WriteString(w, "spans refused: bad resource\n")
	}))
	defer srv.Close()
	c := newOTLPClient(srv.URL)
	c.headers = map[string]string{"Authorization": "Bearer t"}
	c.policy = retry.Policy{Initial: time.Millisecond, Multiplier: 2, Max: 4 * time.Millisecond, Window: time.Minute}
	spans := []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "fetch"}}}}}}
	upload := func(codes ...int) (int, error) {
		mu.Lock()
		answers, seen = codes, nil
		mu.Unlock()
		err := c.UploadTraces(context.Background(), spans)
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if s != "Bearer t application/x-protobuf" {
				t.Errorf("request headers = %q", s)
			}
		}
		return len(seen), err
	}
	if n, err := upload(503, 503, 200); err != nil || n != 3 {
		t.Errorf("503, 503, 200: %d requests, %v; want 3, nil", n, err)
	}
	if n, err := upload(400, 200); err == nil || n != 1 || !strings.Contains(err.Error(), "400 Bad Request: spans refused: bad resource") {
		t.Errorf("400: %d requests, %v; want 1 and the collector's reason", n, err)
	}
	c.policy.Window = 0
	c.policy.MaxAttempts = 2
	if n, err := upload(503, 503, 200); err == nil || n != 2 {
		t.Errorf("503s past the attempts: %d requests, %v; want 2 and an error", n, err)
	}
}

// TestExportRequestIsTheCollectorsMessage reads the request the exporter
// encodes by hand with the collector's own message type.
func TestExportRequestIsTheCollectorsMessage(t *testing.T) {
	spans := []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "receive"}, {Name: "publish"}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "fetch"}}}}},
	}
	b, err := exportRequest(spans)
	if err != nil {
		t.Fatal(err)
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&req, &collectortrace.ExportTraceServiceRequest{ResourceSpans: spans}) {
		t.Fatalf("decoded %v, want the spans given", &req)
	}
}

// TestTracingLinksNoGRPC keeps the OTLP transport's reason to be: no
// package of gRPC in the binary, tracing on or off.
func TestTracingLinksNoGRPC(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ordersync/ordersync/internal/tracing").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "google.golang.org/grpc") || strings.HasPrefix(p, "github.com/grpc-ecosystem/") {
			t.Errorf("internal/tracing links %s", p)
		}
	}
}

// TestOTLPClientKeepsItsConnections holds the exporter's connections to
// itself: batches reuse one connection even when the collector answers
// with a body, and stopping the exporter leaves the idle connections of
// http.DefaultTransport, which other clients share, open.
func TestOTLPClientKeepsItsConnections(t *testing.T) {
	newConns := func(srv *httptest.Server) *atomic.Int64 {
		var n atomic.Int64
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		return &n
	}
	collector := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte{0}, 4096)) // a partial-success message, longer than what an error keeps
	}))
	collectorConns := newConns(collector)
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	otherConns := newConns(other)
	get := func() {
		resp, err := http.Get(other.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get()

	c := newOTLPClient(collector.URL)
	spans := []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "fetch"}}}}}}
	for range 3 {
		if err := c.UploadTraces(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
	}
	if n := collectorConns.Load(); n != 1 {
		t.Errorf("3 batches took %d connections, want 1", n)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	get()
	if n := otherConns.Load(); n != 1 {
		t.Errorf("after the exporter stopped, http.DefaultClient opened %d connections to the same server, want 1", n)
	}
	http.DefaultClient.CloseIdleConnections()
}
