package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/proxy"
)

// RejectionRecorder keeps the bounded record of requests refused before
// they could be trusted; the store implements it.
type RejectionRecorder interface {
	RecordRejections(ctx context.Context, p ordersync.RecordRejectionsParams) error
}

// rejectionKey is one row of the record: a minute, an account, a source
// and a reason.
type rejectionKey struct {
	minute  time.Time
	account string
	source  string
	reason  ordersync.RejectionReason
}

// rejectionTally counts unauthenticated rejections in memory and hands
// them to the recorder every flush interval, so that what a flood costs
// is one small transaction per interval and at most sourcesPerMinute rows
// per account and reason per minute, however many requests it sends. It
// also writes the WARN summary an operator sees.
type rejectionTally struct {
	rec           RejectionRecorder // nil: only the log and the metrics
	cfg           *Config
	logger        *slog.Logger
	recordDropped func(n int)

	mu      sync.Mutex
	pending map[rejectionKey]*ordersync.RejectionCount
	// sources are the distinct keys of the current minute, so its rows
	// stay within the cap across flushes.
	minute  time.Time
	sources map[rejectionKey]struct{}
	// summary is what the next WARN line reports.
	summary struct {
		counts             map[ordersync.RejectionReason]int64
		lastSource, lastAt string
		lastAccount        string
	}
	loggedAt time.Time
	closed   bool

	stop chan struct{}
	done chan struct{}
}

func startTally(rec RejectionRecorder, cfg *Config, logger *slog.Logger, recordDropped func(int)) *rejectionTally {
	t := &rejectionTally{
		rec: rec, cfg: cfg, logger: logger, recordDropped: recordDropped,
		pending: map[rejectionKey]*ordersync.RejectionCount{},
		sources: map[rejectionKey]struct{}{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	t.summary.counts = map[ordersync.RejectionReason]int64{}
	go t.run()
	return t
}

// add counts one rejection; it never waits for the database.
func (t *rejectionTally) add(at time.Time, account, source string, reason ordersync.RejectionReason) {
	at = at.UTC()
	minute := at.Truncate(time.Minute)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		t.recordDropped(1)
		return
	}
	if !minute.Equal(t.minute) {
		t.minute = minute
		clear(t.sources)
	}
	k := rejectionKey{minute: minute, account: account, source: source, reason: reason}
	if _, seen := t.sources[k]; !seen {
		if len(t.sources) >= t.cfg.RejectionSourcesPerMinute {
			k.source = ordersync.RejectionSourceOther
		}
		t.sources[k] = struct{}{}
	}
	c := t.pending[k]
	if c == nil {
		c = &ordersync.RejectionCount{Minute: minute, Account: account, Source: k.source, Reason: reason}
		t.pending[k] = c
	}
	c.Count++
	c.Last = at
	t.summary.counts[reason]++
	t.summary.lastSource, t.summary.lastAccount = source, account
	t.summary.lastAt = at.Format(time.RFC3339)
}

func (t *rejectionTally) run() {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.RejectionFlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			t.flush(true)
			return
		case <-tick.C:
			t.flush(false)
		}
	}
}

// flush writes the pending counts and, once per log interval, the WARN
// summary of the rejections since the last one.
func (t *rejectionTally) flush(final bool) {
	now := t.cfg.Clock()
	t.mu.Lock()
	t.closed = final
	counts := make([]ordersync.RejectionCount, 0, len(t.pending))
	for _, c := range t.pending {
		counts = append(counts, *c)
	}
	clear(t.pending)
	var summary []any
	if len(t.summary.counts) > 0 && (final || now.Sub(t.loggedAt) >= t.cfg.RejectionLogInterval) {
		var total int64
		reasons := make([]string, 0, len(t.summary.counts))
		for r, n := range t.summary.counts {
			total += n
			reasons = append(reasons, string(r))
		}
		sort.Strings(reasons)
		summary = []any{"count", total}
		for _, r := range reasons {
			summary = append(summary, r, t.summary.counts[ordersync.RejectionReason(r)])
		}
		summary = append(summary, "last_source", t.summary.lastSource, "last_account", t.summary.lastAccount, "last_at", t.summary.lastAt)
		if !t.loggedAt.IsZero() {
			summary = append(summary, "since", t.loggedAt.UTC().Format(time.RFC3339))
		}
		clear(t.summary.counts)
		t.loggedAt = now
	}
	t.mu.Unlock()

	if summary != nil {
		t.logger.Warn("webhooks rejected before verification (wrong webhook secret, or someone else posting)", summary...)
	}
	if t.rec == nil || len(counts) == 0 {
		return
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].Minute.Before(counts[j].Minute) })
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RecordTimeout)
	defer cancel()
	err := t.rec.RecordRejections(ctx, ordersync.RecordRejectionsParams{
		Counts: counts, Before: now.Add(-t.cfg.RejectionRetention), MaxRows: t.cfg.RejectionMaxRows,
	})
	if err != nil {
		var n int64
		for _, c := range counts {
			n += c.Count
		}
		t.recordDropped(int(n))
		t.logger.Warn("rejection counts not recorded", "rows", len(counts), "requests", n, "err", err)
	}
}

// close writes what is pending and stops the flusher.
func (t *rejectionTally) close() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
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
