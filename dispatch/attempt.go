package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/retry"
	"github.com/ordersync/ordersync/internal/retryafter"
	"github.com/ordersync/ordersync/internal/tracing"
)

// The retry schedule: exponential from retryInitial, doubling, capped at
// retryMaxInterval, each wait randomised by ±50%, as docs/fulfilment-http.md
// publishes it.
const (
	retryInitial     = time.Second
	retryMultiplier  = 2
	retryMaxInterval = time.Hour
	retryJitter      = 0.5
)

// maxAnswer is how much of an endpoint's answer is read and kept.
const maxAnswer = 1024

// verdict is what one attempt's answer means.
type verdict int

const (
	delivered verdict = iota
	transient
	permanent
	gone
)

// attemptResult is one attempt's answer.
type attemptResult struct {
	verdict    verdict
	status     int // 0: no answer
	answer     string
	err        error
	retryAfter time.Duration // from a 429 or 503, capped; 0 when none
	label      string
}

// attempt sends one signed request, within a deliver span that continues
// trace (the relay's traceparent, "" for none), and classifies the answer.
func (d *Dispatcher) attempt(ctx context.Context, client *http.Client, ep *ordersync.Endpoint, id string, body []byte, trace string) attemptResult {
	if d.cfg.Tracer == nil {
		return d.send(ctx, client, ep, id, body, "")
	}
	ctx, span := d.cfg.Tracer.Start(ctx, tracing.SpanDeliver, trace)
	span.SetAttribute("endpoint", ep.ID)
	res := d.send(ctx, client, ep, id, body, span.TraceParent())
	span.SetInt("http.response.status_code", res.status)
	err := res.err
	if err == nil && res.verdict != delivered {
		err = fmt.Errorf("endpoint answered %d", res.status)
	}
	span.End(err)
	return res
}

// send sends one signed request with client, with traceparent when it is not "", and
// classifies the answer.
func (d *Dispatcher) send(ctx context.Context, client *http.Client, ep *ordersync.Endpoint, id string, body []byte, traceparent string) attemptResult {
	now := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return attemptResult{verdict: permanent, err: fmt.Errorf("build request: %w", err), label: "network"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ordersync-webhooks")
	if traceparent != "" {
		req.Header[tracing.Header] = []string{traceparent}
	}
	if err := delivery.Sign(req.Header, id, now, body, ep.SigningSecrets(now)...); err != nil {
		return attemptResult{verdict: permanent, err: err, label: "network"}
	}
	resp, err := client.Do(req)
	d.metrics.duration.WithLabelValues(ep.ID).Observe(time.Since(now).Seconds())
	if err != nil {
		label := "network"
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			label = "timeout"
		}
		return attemptResult{verdict: transient, err: err, label: label}
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	r := attemptResult{status: resp.StatusCode, answer: string(answer)}
	r.verdict, r.label, r.retryAfter = classify(resp.StatusCode, resp.Header.Get("Retry-After"), time.Now(), d.cfg.MaxRetryAfter)
	return r
}

// classify says what an answer's status means, its label in the attempts
// metric, and for a 429 or 503 the wait its Retry-After asks for, capped at
// maxRetryAfter (0 when none).
func classify(code int, retryAfter string, now time.Time, maxRetryAfter time.Duration) (verdict, string, time.Duration) {
	switch {
	case code >= 200 && code < 300:
		return delivered, "2xx", 0
	case code == http.StatusGone:
		return gone, "410", 0
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		label := "429"
		if code == http.StatusServiceUnavailable {
			label = "5xx"
		}
		wait, _ := retryafter.Parse(retryAfter, now, maxRetryAfter)
		return transient, label, wait
	case code >= 500:
		return transient, "5xx", 0
	case code >= 400:
		return permanent, "4xx", 0
	}
	return permanent, "3xx", 0
}

// deliveryPolicy is the retry schedule of an event from initial, given up
// once a wait would end more than window after its publication. A wait a
// 429 or 503 asked for is kept as asked.
func deliveryPolicy(initial, window time.Duration) *retry.Policy {
	return &retry.Policy{Initial: initial, Multiplier: retryMultiplier, Max: retryMaxInterval,
		Low: 1 - retryJitter, High: 1 + retryJitter, Window: window, Exhausted: "out of retries"}
}

// RetrySchedule returns the nominal waits (before jitter) between the
// attempts of one event within window: the published schedule, that of the
// default RetryInitial.
func RetrySchedule(window time.Duration) []time.Duration {
	var out []time.Duration
	p := deliveryPolicy(retryInitial, window)
	var total time.Duration
	for attempt := 1; ; attempt++ {
		wait := p.Nominal(attempt)
		if total+wait > window {
			return out
		}
		out = append(out, wait)
		total += wait
	}
}
