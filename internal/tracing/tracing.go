// Package tracing is ordersync's OpenTelemetry tracing: a span per hop of
// the pipeline (receive, publish, fetch, apply, relay, deliver), joined
// across processes by a W3C traceparent that the hops carry in NATS
// headers, in the outbox and on the outbound delivery. A nil *Tracer is
// tracing off: its methods do nothing and allocate nothing, so the hot
// path's hooks cost a nil check.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Header is the W3C Trace Context header the hops carry the trace in: on
// the events' and the orders' NATS messages and on a delivery's request.
const Header = "traceparent"

// The spans' names, one per hop.
const (
	SpanReceive = "receive"
	SpanPublish = "publish"
	SpanFetch   = "fetch"
	SpanApply   = "apply"
	SpanRelay   = "relay"
	SpanDeliver = "deliver"
)

// Config is tracing as the settings give it.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's URL, e.g.
	// http://collector:4318 (the path /v1/traces is added when it has
	// none); empty turns tracing off.
	Endpoint string
	// SampleRatio is the share of new traces recorded, 0 to 1; a trace
	// begun elsewhere follows its parent's decision.
	SampleRatio float64
	// ServiceName is the service.name resource of every span.
	ServiceName string
}

// Validate names the setting that is wrong.
func (c Config) Validate() error {
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("tracing_sample_ratio must be between 0 and 1, got %g", c.SampleRatio)
	}
	if c.Endpoint == "" {
		return nil
	}
	if _, err := tracesURL(c.Endpoint); err != nil {
		return fmt.Errorf("tracing_endpoint: %w", err)
	}
	if c.ServiceName == "" {
		return errors.New("tracing_service_name must not be empty with tracing_endpoint set")
	}
	return nil
}

// tracesURL is the endpoint with the OTLP traces path when it names none.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Tracer starts the pipeline's spans. The nil *Tracer is tracing off.
type Tracer struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider
	prop     propagation.TraceContext
}

// New returns the tracer cfg asks for: nil (off) without an endpoint, else
// one exporting in batches over OTLP/HTTP (protobuf). The exporter also
// reads the SDK's OTEL_EXPORTER_OTLP_HEADERS (and _TRACES_HEADERS), for a
// collector's token.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	if cfg.Endpoint == "" {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := tracesURL(cfg.Endpoint)
	exp, err := otlptrace.New(ctx, newOTLPClient(u))
	if err != nil {
		return nil, fmt.Errorf("tracing exporter: %w", err)
	}
	return newTracer(cfg, sdktrace.WithBatcher(exp)), nil
}

// NewWithExporter returns a tracer that hands every span to exp as it
// ends, for tests (the SDK's tracetest.InMemoryExporter).
func NewWithExporter(cfg Config, exp sdktrace.SpanExporter) *Tracer {
	return newTracer(cfg, sdktrace.WithSyncer(exp))
}

func newTracer(cfg Config, export sdktrace.TracerProviderOption) *Tracer {
	name := cfg.ServiceName
	if name == "" {
		name = "ordersync"
	}
	provider := sdktrace.NewTracerProvider(export,
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))))
	return &Tracer{tracer: provider.Tracer("github.com/ordersync/ordersync"), provider: provider}
}

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Span is one hop's span; the zero Span (tracing off) does nothing.
type Span struct {
	span trace.Span
	prop propagation.TraceContext
}

// Start starts span name as a child of the span in ctx, else of parent, a
// traceparent carried from another hop ("" or one that does not parse
// starts a trace). The returned context holds the span.
func (t *Tracer) Start(ctx context.Context, name, parent string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	if parent != "" && !trace.SpanContextFromContext(ctx).IsValid() {
		c := carrier(parent)
		ctx = t.prop.Extract(ctx, &c)
	}
	ctx, sp := t.tracer.Start(ctx, name)
	return ctx, Span{span: sp, prop: t.prop}
}

// TraceParent is the span as a traceparent for the next hop; "" for the
// zero Span.
func (s Span) TraceParent() string {
	if s.span == nil {
		return ""
	}
	var c carrier
	s.prop.Inject(trace.ContextWithSpan(context.Background(), s.span), &c)
	return string(c)
}

// SetAttribute records a string attribute (an order code, an endpoint).
func (s Span) SetAttribute(key, value string) {
	if s.span != nil {
		s.span.SetAttributes(attribute.String(key, value))
	}
}

// SetInt records an integer attribute (an answer's status).
func (s Span) SetInt(key string, value int) {
	if s.span != nil {
		s.span.SetAttributes(attribute.Int(key, value))
	}
}

// End ends the span, marked failed with err when err is not nil.
func (s Span) End(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}

// carrier is a traceparent as the propagator reads and writes it; it
// ignores tracestate, which no hop carries.
type carrier string

func (c *carrier) Get(key string) string {
	if strings.EqualFold(key, Header) {
		return string(*c)
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	if strings.EqualFold(key, Header) {
		*c = carrier(value)
	}
}

func (c *carrier) Keys() []string { return []string{Header} }
