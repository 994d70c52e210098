package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/retry"
	"github.com/ordersync/ordersync/internal/retryafter"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpClient posts spans to an OTLP/HTTP collector as protobuf: the
// transport under the SDK's own OTLP exporter (otlptrace), which converts
// and batches the spans. The SDK's HTTP transport (otlptracehttp) is not
// used because its configuration package links gRPC into every process,
// tracing on or off, and the binary's size is resident memory
// (docs/benchmarks.md, "What the peak RSS holds").
type otlpClient struct {
	url     string
	headers map[string]string
	http    *http.Client
	policy  retry.Policy
}

// otlpRetry is otlptracehttp's default retry: a 5 s first wait growing to
// 30 s, given up one minute after the first attempt; a Retry-After the
// collector sends is kept.
var otlpRetry = retry.Policy{Initial: 5 * time.Second, Multiplier: 1.5, Max: 30 * time.Second, Low: 0.5, High: 1.5, Window: time.Minute}

func newOTLPClient(endpoint string) *otlpClient {
	return &otlpClient{
		url:     endpoint,
		headers: otlpHeaders(os.Getenv),
		// A transport of its own: Stop closes its idle connections, not
		// those of http.DefaultTransport that other clients share.
		http:   &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()},
		policy: otlpRetry,
	}
}

// otlpHeaders is the headers the SDK's environment names for every
// request: OTEL_EXPORTER_OTLP_TRACES_HEADERS, else OTEL_EXPORTER_OTLP_HEADERS,
// each "key=value,key=value" with URL-escaped values. An entry without a
// key or whose value does not unescape is left out, as the SDK does.
func otlpHeaders(getenv func(string) string) map[string]string {
	v := getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
	if v == "" {
		v = getenv("OTEL_EXPORTER_OTLP_HEADERS")
	}
	h := map[string]string{}
	for _, entry := range strings.Split(v, ",") {
		key, value, ok := strings.Cut(entry, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			continue
		}
		value, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil {
			continue
		}
		h[key] = value
	}
	return h
}

func (c *otlpClient) Start(context.Context) error { return nil }

func (c *otlpClient) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts one ExportTraceServiceRequest, again after a 429,
// 502, 503 or 504 within the retry window and ctx.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := exportRequest(spans)
	if err != nil {
		return err
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		wait, err := c.post(ctx, body)
		if err == nil {
			return nil
		}
		if wait < 0 {
			return err
		}
		d := c.policy.Decide(attempt, time.Since(start), retry.Failure{Kind: retry.Transient, Wait: wait})
		if !d.Retry {
			return err
		}
		if serr := retry.Sleep(ctx, d.After); serr != nil {
			return fmt.Errorf("%w (not sent again: %w)", err, serr)
		}
	}
}

// post sends body once. A failure worth another attempt comes with the
// wait the collector asked for (0 for none); one that is not, with -1.
func (c *otlpClient) post(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("otlp export: %w", err)
	}
	defer func() {
		// Read to the end so that the connection is kept for the next batch.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return 0, nil
	case code == http.StatusTooManyRequests || code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		wait, _ := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now(), otlpRetry.Max)
		return wait, fmt.Errorf("otlp export: %s", resp.Status)
	default:
		return -1, fmt.Errorf("otlp export: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
}

// exportRequest encodes an ExportTraceServiceRequest, whose one field is
// resource_spans = 1, without the collector's service package (which
// links gRPC).
func exportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, fmt.Errorf("otlp export: encode spans: %w", err)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}
