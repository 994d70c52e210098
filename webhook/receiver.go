package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/proxy"
	"github.com/ordersync/ordersync/internal/quietlog"
	"github.com/ordersync/ordersync/internal/tracing"
)

// Path is where the default account's webhooks arrive; an extra account's
// arrive at Path + "/" + its name.
const Path = "/webhooks/paymentlink"

// DefaultRejectionFlushInterval is how often the counts of requests
// rejected before verification are written: a handful of rows a minute
// whatever the flood.
const DefaultRejectionFlushInterval = 10 * time.Second

// EventRecorder writes event log rows; the store implements it.
type EventRecorder interface {
	RecordEvents(ctx context.Context, events []ordersync.EventRecord) error
}

// AccountConfig configures one extra merchant account.
type AccountConfig struct {
	// Secrets are its webhook secrets; several during a rotation.
	Secrets []string
}

// Config configures a Receiver.
type Config struct {
	// Secrets are the default account's webhook secrets (the portal's
	// 44-character secret); several are accepted during a rotation.
	Secrets []string
	// Insecure lets an account without secrets accept unsigned webhooks.
	// Accounts with secrets are verified regardless.
	Insecure bool
	// Accounts are extra accounts, served at Path/{name}. Names are letters,
	// digits, '-' and '_'.
	Accounts map[string]AccountConfig
	// Publisher makes accepted events durable. Required.
	Publisher ordersync.EventPublisher
	// Admit, when set, is asked before each publish: an error (the data's
	// disk below its watermark, a queue that cannot store) answers 503
	// with Retry-After at once, nothing published, instead of waiting for
	// a write to fail or time out.
	Admit func() error
	// Recorder logs the requests rejected after their signature was
	// verified (a signed body that is not an event); nil: they are only
	// counted.
	Recorder EventRecorder
	// Rejections keeps the per-minute counts of requests rejected before
	// they could be trusted (no valid signature, too large, malformed while
	// unsigned); nil: they are only counted and logged.
	Rejections RejectionRecorder
	// RejectionRetention is how long those counts are kept; default 72h.
	RejectionRetention time.Duration
	// RejectionMaxRows caps the rows of counts kept, the oldest minutes
	// going first; default 10,000.
	RejectionMaxRows int
	// RejectionSourcesPerMinute is how many distinct (account, source,
	// reason) rows one minute gets; the sources beyond are counted as
	// "other". Default 200.
	RejectionSourcesPerMinute int
	// RejectionFlushInterval is how often counts are written; default
	// DefaultRejectionFlushInterval.
	RejectionFlushInterval time.Duration
	// RejectionLogInterval is how often at most a WARN line sums up the
	// rejections; default 1m.
	RejectionLogInterval time.Duration
	// MaxBodyBytes is the largest body accepted; default 64 KiB. The
	// provider's webhooks are about 1 KB; the limit leaves 60 times that for
	// long metadata while bounding what an unsigned request can make the
	// receiver hold before its signature is checked.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the memory held by bodies being read or
	// handled: each may hold its first 8 KiB (every real webhook fits)
	// without asking; bytes beyond come from this shared budget, and a
	// request that finds it spent is answered 503 with Retry-After.
	// Default 8 MiB.
	MaxBodyBytesInFlight int64
	// PublishTimeout bounds the wait for the queue's ack; default 5s.
	PublishTimeout time.Duration
	// RetryAfter is the Retry-After of a 503; default 5s.
	RetryAfter time.Duration
	// RecordBuffer is how many rejected requests wait for the recorder
	// before further ones are dropped (and counted); default 4096.
	RecordBuffer int
	// RecordTimeout bounds one RecordEvents call; default 5s.
	RecordTimeout time.Duration
	Registerer    prometheus.Registerer
	// Logger is named by the caller (the wiring gives it its component).
	Logger *slog.Logger
	// Clock stamps ReceivedAt; default time.Now.
	Clock func() time.Time
	// TrustedProxies are the peers (load balancers, TLS terminators) whose
	// X-Forwarded-For is believed when naming the client of a rejected
	// request; anyone else is named by the connection's address.
	TrustedProxies []netip.Prefix
	// Tracer traces each webhook's receive and publish; nil: off.
	Tracer *tracing.Tracer
}

func (c *Config) withDefaults() {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 64 << 10
	}
	if c.MaxBodyBytesInFlight == 0 {
		c.MaxBodyBytesInFlight = 8 << 20
	}
	if c.RejectionRetention == 0 {
		c.RejectionRetention = 72 * time.Hour
	}
	if c.RejectionMaxRows == 0 {
		c.RejectionMaxRows = 10_000
	}
	if c.RejectionSourcesPerMinute == 0 {
		c.RejectionSourcesPerMinute = 200
	}
	if c.RejectionFlushInterval == 0 {
		c.RejectionFlushInterval = DefaultRejectionFlushInterval
	}
	if c.RejectionLogInterval == 0 {
		c.RejectionLogInterval = time.Minute
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = 5 * time.Second
	}
	if c.RecordBuffer == 0 {
		c.RecordBuffer = 4096
	}
	if c.RecordTimeout == 0 {
		c.RecordTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

func (c *Config) validate() error {
	if c.Publisher == nil {
		return errors.New("webhook receiver: Publisher is required")
	}
	if err := checkSecrets("webhook secret (Secrets)", c.Secrets, c.Insecure); err != nil {
		return err
	}
	for name, a := range c.Accounts {
		if name == ordersync.DefaultAccount {
			return fmt.Errorf("webhook receiver: Accounts[%q]: the default account's secrets go in Secrets", name)
		}
		if !ordersync.ValidName(name) {
			return fmt.Errorf("webhook receiver: Accounts[%q]: name must be %s", name, ordersync.NameRule)
		}
		if err := checkSecrets(fmt.Sprintf("webhook secret of account %q (Accounts[%q].Secrets)", name, name), a.Secrets, c.Insecure); err != nil {
			return err
		}
	}
	switch {
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("webhook receiver: MaxBodyBytes %d must be positive", c.MaxBodyBytes)
	case c.MaxBodyBytesInFlight < c.MaxBodyBytes:
		return fmt.Errorf("webhook receiver: MaxBodyBytesInFlight %d must be at least MaxBodyBytes (%d)", c.MaxBodyBytesInFlight, c.MaxBodyBytes)
	case c.RejectionRetention < 0:
		return fmt.Errorf("webhook receiver: RejectionRetention %s must be positive", c.RejectionRetention)
	case c.RejectionSourcesPerMinute < 0:
		return fmt.Errorf("webhook receiver: RejectionSourcesPerMinute %d must be positive", c.RejectionSourcesPerMinute)
	case c.RejectionMaxRows < 2*c.RejectionSourcesPerMinute:
		return fmt.Errorf("webhook receiver: RejectionMaxRows %d must hold two minutes of RejectionSourcesPerMinute (%d)", c.RejectionMaxRows, c.RejectionSourcesPerMinute)
	case c.RejectionFlushInterval < 0:
		return fmt.Errorf("webhook receiver: RejectionFlushInterval %s must be positive", c.RejectionFlushInterval)
	case c.RejectionLogInterval < 0:
		return fmt.Errorf("webhook receiver: RejectionLogInterval %s must be positive", c.RejectionLogInterval)
	case c.PublishTimeout < 0:
		return fmt.Errorf("webhook receiver: PublishTimeout %s must be positive", c.PublishTimeout)
	case c.RetryAfter < 0:
		return fmt.Errorf("webhook receiver: RetryAfter %s must be positive", c.RetryAfter)
	case c.RecordBuffer < 0:
		return fmt.Errorf("webhook receiver: RecordBuffer %d must be positive", c.RecordBuffer)
	case c.RecordTimeout < 0:
		return fmt.Errorf("webhook receiver: RecordTimeout %s must be positive", c.RecordTimeout)
	}
	return nil
}

func checkSecrets(setting string, secrets []string, insecure bool) error {
	for i, s := range secrets {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("webhook receiver: %s[%d] is empty", setting, i)
		}
	}
	if len(secrets) == 0 && !insecure {
		return fmt.Errorf("webhook receiver: no %s configured (set one, or enable insecure mode to accept unsigned webhooks)", setting)
	}
	return nil
}

// account is one merchant account as the receiver serves it.
type account struct {
	name string
	// verify checks its signatures; nil: unsigned webhooks accepted
	// (insecure mode). SetSecrets replaces it.
	verify atomic.Pointer[verifier]
	// requests counts the account's answers by outcome; counts holds the
	// same for the heartbeat (Receiver.Counts).
	requests [numOutcomes]prometheus.Counter
	counts   [numOutcomes]atomic.Int64
}

func newAccount(name string, secrets []string, m *metrics) *account {
	a := &account{name: name, requests: m.requestsOf(name)}
	a.setSecrets(secrets)
	return a
}

func (a *account) setSecrets(secrets []string) {
	if len(secrets) == 0 {
		a.verify.Store(nil)
		return
	}
	a.verify.Store(newVerifier(secrets))
}

// unknownAccount is the label of requests for an account not configured.
const unknownAccount = "unknown"

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

// warnUnsigned names the accounts whose webhooks are not verified.
func (rc *Receiver) warnUnsigned() {
	var unsigned []string
	for name, a := range rc.accounts {
		if a.verify.Load() == nil {
			unsigned = append(unsigned, name)
		}
	}
	if len(unsigned) > 0 {
		sort.Strings(unsigned)
		rc.logger.Warn("INSECURE: webhook signatures are NOT verified for these accounts; anyone who can reach the receiver can inject events",
			"accounts", unsigned)
	}
}

// SetSecrets replaces the webhook secrets of every account served, by
// account name (the default account's under ordersync.DefaultAccount), all
// or none: secrets must name exactly the accounts the receiver was built
// with, each valid as in Config. A request already being verified finishes
// with the secrets it began with.
func (rc *Receiver) SetSecrets(secrets map[string][]string) error {
	for name := range secrets {
		if _, ok := rc.accounts[name]; !ok {
			return fmt.Errorf("webhook receiver: account %q is not served here (an account is added at start)", name)
		}
	}
	for name := range rc.accounts {
		s, ok := secrets[name]
		if !ok {
			return fmt.Errorf("webhook receiver: no secrets given for account %q", name)
		}
		if err := checkSecrets(fmt.Sprintf("webhook secret of account %q", name), s, rc.cfg.Insecure); err != nil {
			return err
		}
	}
	for name, a := range rc.accounts {
		a.setSecrets(secrets[name])
	}
	rc.warnUnsigned()
	return nil
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

// reply is a prebuilt answer body with its header values, built once:
// net/http only reads the header slices, so every response can share them.
type reply struct {
	body          []byte
	contentLength []string
}

func newReply(body string) reply {
	return reply{body: []byte(body), contentLength: []string{strconv.Itoa(len(body))}}
}

var (
	contentTypeJSON = []string{"application/json"}
	allowPost       = []string{http.MethodPost}

	bodyAccepted         = newReply(`{"status":"accepted"}`)
	bodyDuplicate        = newReply(`{"status":"duplicate"}`)
	bodyIgnored          = newReply(`{"status":"ignored"}`)
	bodyMissingSignature = newReply(`{"status":"unauthorized","error":"missing signature"}`)
	bodyInvalidSignature = newReply(`{"status":"unauthorized","error":"invalid signature"}`)
	bodyBadRequest       = newReply(`{"status":"bad_request","error":"not a webhook event: want a JSON object in UTF-8"}`)
	bodyUnreadable       = newReply(`{"status":"bad_request","error":"the body could not be read"}`)
	bodyTooLarge         = newReply(`{"status":"too_large"}`)
	bodyNotAllowed       = newReply(`{"status":"method_not_allowed"}`)
	bodyUnknownAccount   = newReply(`{"status":"unknown_account"}`)
	bodyUnavailable      = newReply(`{"status":"unavailable","error":"the queue did not acknowledge; retry later"}`)
	bodyNotAdmitted      = newReply(`{"status":"unavailable","error":"webhooks cannot be stored now (disk space); retry later"}`)
	bodyBusy             = newReply(`{"status":"busy","error":"too many large bodies in flight; retry later"}`)
)

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

// route maps a request path to its account.
func (rc *Receiver) route(path string) (*account, bool) {
	rest, ok := strings.CutPrefix(path, Path)
	if !ok {
		return nil, false
	}
	name := strings.Trim(rest, "/")
	switch {
	case rest != "" && rest[0] != '/':
		return nil, false // "/webhooks/paymentlinkX"
	case name == "":
		name = ordersync.DefaultAccount
	case strings.Contains(name, "/"):
		return nil, false
	}
	a, err := rc.accounts.For(name)
	return a, err == nil
}

// freeBodyBytes is how much of a body a request may hold without drawing
// on the shared budget: every real webhook fits, so a flood of large
// bodies never turns them away.
const freeBodyBytes = 8 << 10

// errBusy: the budget of body bytes in flight is spent.
var errBusy = errors.New("webhook bodies in flight over their budget")

// bodyBudget counts the bytes held by request bodies. Beyond each
// request's first freeBodyBytes, they are taken from limit.
type bodyBudget struct {
	limit int64
	used  atomic.Int64 // bytes taken beyond the free ones
	held  prometheus.Gauge
}

// heldBody is what one request holds: its buffer's capacity, and how much
// of it was taken from the budget.
type heldBody struct{ size, taken int64 }

// grow accounts a buffer growing from h.size to size bytes; false when the
// budget cannot give the bytes beyond the free ones.
func (b *bodyBudget) grow(h *heldBody, size int64) bool {
	need := max(0, size-freeBodyBytes) - h.taken
	for need > 0 {
		used := b.used.Load()
		if used+need > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+need) {
			h.taken += need
			break
		}
	}
	b.held.Add(float64(size - h.size))
	h.size = size
	return true
}

func (b *bodyBudget) release(h heldBody) {
	b.used.Add(-h.taken)
	b.held.Sub(float64(h.size))
}

// readBody reads at most MaxBodyBytes into a buffer that grows as bytes
// arrive (an announced Content-Length is not allocated up front), within
// the budget of body bytes in flight. On *http.MaxBytesError the bytes read
// so far are returned with it; errBusy when the budget is spent. The
// caller releases what it holds.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request) ([]byte, heldBody, error) {
	var h heldBody
	limit := rc.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, h, &http.MaxBytesError{Limit: limit}
	}
	// Room for one byte past the limit, so that MaxBytesReader can tell a
	// body of exactly the limit from a longer one; a body whose length is
	// announced needs no more than that.
	ceiling := limit + 1
	if r.ContentLength >= 0 {
		ceiling = r.ContentLength
	}
	size := min(ceiling, 512)
	if !rc.bodies.grow(&h, size) {
		return nil, h, errBusy
	}
	buf := make([]byte, 0, size)
	src := http.MaxBytesReader(w, r.Body, limit)
	for {
		if int64(len(buf)) == ceiling && r.ContentLength >= 0 {
			return buf, h, nil // the server ends the body at Content-Length
		}
		if len(buf) == cap(buf) {
			next := min(2*int64(cap(buf)), ceiling)
			if !rc.bodies.grow(&h, next) {
				return buf, h, errBusy
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, h, nil
		case err != nil:
			return buf, h, fmt.Errorf("read webhook body: %w", err)
		}
	}
}

func (rc *Receiver) answer(w http.ResponseWriter, acct *account, status int, o outcome, r reply) {
	acct.requests[o].Inc()
	acct.counts[o].Add(1)
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = r.contentLength
	w.WriteHeader(status)
	w.Write(r.body)
}

// rejectUnverified counts a request refused before it could be trusted:
// anyone can send those, so each costs no row of its own, only a count in
// the bounded per-minute record and the rate-limited WARN summary.
func (rc *Receiver) rejectUnverified(acct *account, r *http.Request, receivedAt time.Time, reason ordersync.RejectionReason) {
	client := rc.clientIP(r)
	rc.logger.DebugContext(r.Context(), "webhook rejected", "account", acct.name, "reason", string(reason), "client", client)
	rc.tally.add(receivedAt, acct.name, client, reason)
}

// rejectMalformed handles a body that is not an event: signed ones go to
// the event log, unsigned ones (insecure mode) are only counted.
func (rc *Receiver) rejectMalformed(acct *account, r *http.Request, body []byte, receivedAt time.Time, verdict ordersync.SignatureVerdict, detail string) {
	if verdict != ordersync.SignatureValid {
		rc.rejectUnverified(acct, r, receivedAt, ordersync.RejectMalformed)
		return
	}
	rc.reject(acct, r, body, receivedAt, verdict, detail)
}

// reject hands a rejected request to the event log, never waiting.
func (rc *Receiver) reject(acct *account, r *http.Request, body []byte, receivedAt time.Time, verdict ordersync.SignatureVerdict, detail string) {
	client := rc.clientIP(r)
	detail += " (from " + client + ")"
	rc.logger.DebugContext(r.Context(), "webhook rejected", "account", acct.name, "reason", detail, "client", client)
	if rc.recorder == nil {
		return
	}
	rc.recorder.add(ordersync.EventRecord{
		MsgID:      "rejected-" + MsgID(acct.name, body),
		Account:    acct.name,
		ReceivedAt: receivedAt,
		Signature:  verdict,
		Outcome:    ordersync.OutcomeRejected,
		Detail:     detail,
	})
}

// clientIP names who sent a request, believing X-Forwarded-For only from
// a trusted proxy.
func (rc *Receiver) clientIP(r *http.Request) string {
	return proxy.Trusted(rc.cfg.TrustedProxies).Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
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
