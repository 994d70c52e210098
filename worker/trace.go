package worker

import (
	"context"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/tracing"
)

// The pool's and the relay's spans. Each continues the trace its input
// carries: a fetch the first of its round's events that has one, an apply
// its fetch, a relay the apply that queued the message. With tracing off
// (a nil Tracer) none of this allocates.

// roundTrace is the traceparent a round's fetch continues.
func roundTrace(items []*item) string {
	for _, it := range items {
		if it.ev.TraceParent != "" {
			return it.ev.TraceParent
		}
	}
	return ""
}

// startApplies starts an apply span for each of params whose
// fetch was traced, and gives the params the span's traceparent for the
// outbox messages they queue; nil when none was.
func startApplies(ctx context.Context, t *tracing.Tracer, batch []commitItem, params []ordersync.ApplyParams) []tracing.Span {
	if t == nil {
		return nil
	}
	spans := make([]tracing.Span, len(params))
	for i := range params {
		if batch[i].trace == "" {
			continue
		}
		_, spans[i] = t.Start(ctx, tracing.SpanApply, batch[i].trace)
		spans[i].SetAttribute("order_code", params[i].Order.OrderCode)
		params[i].TraceParent = spans[i].TraceParent()
	}
	return spans
}

// endSpans ends spans: the first ok as done, the rest failed with err.
func endSpans(spans []tracing.Span, ok int, err error) {
	for i, s := range spans {
		if i < ok {
			s.End(nil)
		} else {
			s.End(err)
		}
	}
}

// startRelays starts a relay span for each message that carries a trace
// and returns the messages to publish, each such one carrying its relay
// span's traceparent instead: a copy, as a round that fails publishes msgs
// again. With tracing off it returns msgs and no spans.
func startRelays(ctx context.Context, t *tracing.Tracer, msgs []ordersync.OutboxMessage) ([]ordersync.OutboxMessage, []tracing.Span) {
	if t == nil {
		return msgs, nil
	}
	out := make([]ordersync.OutboxMessage, len(msgs))
	spans := make([]tracing.Span, len(msgs))
	for i, m := range msgs {
		if m.TraceParent != "" {
			_, spans[i] = t.Start(ctx, tracing.SpanRelay, m.TraceParent)
			spans[i].SetAttribute("order_code", m.OrderCode)
			m.TraceParent = spans[i].TraceParent()
		}
		out[i] = m
	}
	return out, spans
}
