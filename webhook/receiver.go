package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/quietlog"
	"github.com/ordersync/ordersync/internal/tracing"
)

// Path is where the default account's webhooks arrive; an extra account's
// arrive at Path + "/" + its name.
const Path = "/webhooks/paymentlink"

// Receiver is the webhook endpoint. It is an http.Handler for Path and
// Path/{account}; Close it after the HTTP server stopped.
type Receiver struct {
	cfg        Config
	accounts   ordersync.Accounts[*account]
	unknown    *account // counts requests for accounts not configured
	metrics    *metrics
	recorder   *asyncRecorder // nil without a Recorder
	tally      *rejectionTally
	bodies     *bodyBudget
	retryAfter string
	logger     *slog.Logger
	// quiet logs the refusals of webhooks that could not be queued: one
	// line, then a summary per interval (the counts are in metrics).
	quiet *quietlog.Log
	// publishWait sums the publish waits since the last PublishWait call;
	// publishes counts them.
	publishWait, publishes atomic.Int64
}

// New builds a Receiver. With a Recorder it starts the goroutine that
// writes rejected requests; Close stops it.
func New(cfg Config) (*Receiver, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: register metrics: %w", err)
	}
	rc := &Receiver{
		cfg:        cfg,
		accounts:   ordersync.Accounts[*account]{ordersync.DefaultAccount: newAccount(ordersync.DefaultAccount, cfg.Secrets, m)},
		unknown:    &account{name: unknownAccount, requests: m.requestsOf(unknownAccount)},
		metrics:    m,
		retryAfter: strconv.Itoa(int(math.Ceil(cfg.RetryAfter.Seconds()))),
		logger:     cfg.Logger,
	}
	rc.quiet = quietlog.New(rc.logger, quietlog.DefaultInterval)
	for name, a := range cfg.Accounts {
		rc.accounts[name] = newAccount(name, a.Secrets, m)
	}
	rc.warnUnsigned()
	if cfg.Recorder != nil {
		rc.recorder = startRecorder(cfg.Recorder, cfg.RecordBuffer, cfg.RecordTimeout, m.recordDropped, rc.logger)
	}
	rc.bodies = &bodyBudget{limit: cfg.MaxBodyBytesInFlight, held: m.bodyBytes}
	rc.tally = startTally(cfg.Rejections, &rc.cfg, rc.logger, func(n int) { m.recordDropped.Add(float64(n)) })
	return rc, nil
}

// Close writes the rejected requests still buffered and stops the recorder.
// Call it after the HTTP server stopped serving.
func (rc *Receiver) Close() {
	rc.quiet.Close()
	rc.tally.close()
	if rc.recorder != nil {
		rc.recorder.close()
	}
}

// PublishWait is the mean wait for the queue's ack of the webhooks
// published since the last call, and how many there were. The wait grows
// when the process's CPU is short, before the answers' latency does: the
// worker pool in the same process yields to it (PoolConfig.Pressure).
func (rc *Receiver) PublishWait() (mean time.Duration, n int64) {
	n = rc.publishes.Swap(0)
	total := rc.publishWait.Swap(0)
	if n <= 0 {
		return 0, 0
	}
	return time.Duration(total / n), n
}

// ServeHTTP receives one webhook, within a receive span when tracing.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.cfg.Tracer == nil {
		rc.serve(w, r)
		return
	}
	ctx, span := rc.cfg.Tracer.Start(r.Context(), tracing.SpanReceive, r.Header.Get(tracing.Header))
	rc.serve(w, r.WithContext(ctx))
	span.End(nil)
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	acct, ok := rc.route(r.URL.Path)
	if !ok {
		rc.answer(w, rc.unknown, http.StatusNotFound, outcomeUnknownAccount, bodyUnknownAccount)
		return
	}
	if r.Method != http.MethodPost {
		w.Header()["Allow"] = allowPost
		rc.answer(w, acct, http.StatusMethodNotAllowed, outcomeMethodNotAllowed, bodyNotAllowed)
		return
	}
	receivedAt := rc.cfg.Clock()
	body, held, err := rc.readBody(w, r)
	defer rc.bodies.release(held)
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			rc.rejectUnverified(acct, r, receivedAt, ordersync.RejectTooLarge)
			rc.answer(w, acct, http.StatusRequestEntityTooLarge, outcomeTooLarge, bodyTooLarge)
			return
		case errors.Is(err, errBusy):
			w.Header().Set("Retry-After", rc.retryAfter)
			w.Header().Set("Connection", "close")
			rc.answer(w, acct, http.StatusServiceUnavailable, outcomeBusy, bodyBusy)
			return
		}
		rc.logger.DebugContext(r.Context(), "webhook body unreadable", "account", acct.name, "err", err)
		rc.answer(w, acct, http.StatusBadRequest, outcomeBadRequest, bodyUnreadable)
		return
	}

	verdict := ordersync.SignatureInsecure
	if v := acct.verify.Load(); v != nil {
		verdict = v.verify(r.Header.Get(SignatureHeader), body)
	}
	switch verdict {
	case ordersync.SignatureMissing:
		rc.metrics.signatureMissing.Inc()
		rc.rejectUnverified(acct, r, receivedAt, ordersync.RejectSignatureMissing)
		rc.answer(w, acct, http.StatusUnauthorized, outcomeUnauthorized, bodyMissingSignature)
		return
	case ordersync.SignatureInvalid:
		rc.metrics.signatureInvalid.Inc()
		rc.rejectUnverified(acct, r, receivedAt, ordersync.RejectSignatureInvalid)
		rc.answer(w, acct, http.StatusUnauthorized, outcomeUnauthorized, bodyInvalidSignature)
		return
	}

	// encoding/json replaces invalid UTF-8 rather than failing, so check it
	// here: a body that is not text is not an event.
	if !utf8.Valid(body) {
		rc.rejectMalformed(acct, r, body, receivedAt, verdict, "malformed: not UTF-8")
		rc.answer(w, acct, http.StatusBadRequest, outcomeBadRequest, bodyBadRequest)
		return
	}
	ev, err := ordersync.ParseEvent(body)
	if err != nil {
		rc.rejectMalformed(acct, r, body, receivedAt, verdict, ordersync.Clip(err.Error(), 200))
		rc.answer(w, acct, http.StatusBadRequest, outcomeBadRequest, bodyBadRequest)
		return
	}

	reason, ignored := ev.Ignored()
	in := &ordersync.InboundEvent{
		MsgID:      MsgID(acct.name, body),
		Account:    acct.name,
		Body:       body,
		ReceivedAt: receivedAt,
		Signature:  verdict,
		Event:      ev,
		Ignored:    reason,
		Cause:      ordersync.CauseWebhook,
	}
	if rc.cfg.Admit != nil {
		if err := rc.cfg.Admit(); err != nil {
			rc.quiet.Log(slog.LevelWarn, "not admitted", "webhook refused before publishing; answering 503 so the provider retries",
				"account", acct.name, "msg_id", in.MsgID, "type", string(ev.Type), "err", err)
			w.Header().Set("Retry-After", rc.retryAfter)
			rc.answer(w, acct, http.StatusServiceUnavailable, outcomeUnavailable, bodyNotAdmitted)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), rc.cfg.PublishTimeout)
	ctx, span := rc.cfg.Tracer.Start(ctx, tracing.SpanPublish, "")
	in.TraceParent = span.TraceParent()
	start := time.Now()
	dup, err := rc.cfg.Publisher.PublishEvent(ctx, in)
	span.End(err)
	wait := time.Since(start)
	rc.metrics.publishDuration.Observe(wait.Seconds())
	rc.publishWait.Add(int64(wait))
	rc.publishes.Add(1)
	cancel()
	if err != nil {
		rc.quiet.Log(slog.LevelWarn, "not queued", "webhook not queued; answering 503 so the provider retries",
			"account", acct.name, "msg_id", in.MsgID, "type", string(ev.Type), "err", err)
		w.Header().Set("Retry-After", rc.retryAfter)
		rc.answer(w, acct, http.StatusServiceUnavailable, outcomeUnavailable, bodyUnavailable)
		return
	}
	switch {
	case ignored:
		rc.metrics.ignored(reason).Inc()
		rc.answer(w, acct, http.StatusOK, outcomeIgnored, bodyIgnored)
	case dup:
		rc.answer(w, acct, http.StatusOK, outcomeDuplicate, bodyDuplicate)
	default:
		rc.answer(w, acct, http.StatusOK, outcomeAccepted, bodyAccepted)
	}
}

// MsgID is the queue's deduplication key of a webhook: the first 32 hex
// digits of SHA-256 over the account, a newline and the raw body. The
// provider resending the same body yields the same key.
func MsgID(account string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(account))
	h.Write([]byte{'\n'})
	h.Write(body)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}
