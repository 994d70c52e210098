package sim

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// delivery is one webhook to post; a redelivery posts the same body and
// signature.
type delivery struct {
	body      []byte
	signature string
	at        time.Time // due
	seq       uint64    // FIFO among equal due times
	attempts  int
}

// hookQueue delivers webhooks: an unbounded queue ordered by due time, a
// dispatcher that hands due deliveries to a bounded pool of workers, and
// retries with exponential backoff and jitter.
type hookQueue struct {
	s           *Server
	url         string
	secret      string
	maxAttempts int
	backoff     time.Duration
	concurrency int
	timeout     time.Duration
	transport   *http.Transport
	client      *http.Client

	ready chan *delivery
	wake  chan struct{}

	mu      sync.Mutex
	due     deliveryHeap
	seq     uint64
	pending int
	idle    chan struct{} // closed while pending == 0
}

func newHookQueue(s *Server, cfg Config) *hookQueue {
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        cfg.WebhookConcurrency,
		MaxIdleConnsPerHost: cfg.WebhookConcurrency,
		IdleConnTimeout:     90 * time.Second,
	}
	idle := make(chan struct{})
	close(idle)
	return &hookQueue{
		s:           s,
		url:         cfg.WebhookURL,
		secret:      cfg.WebhookSecret,
		maxAttempts: cfg.WebhookMaxAttempts,
		backoff:     cfg.WebhookBackoff,
		concurrency: cfg.WebhookConcurrency,
		timeout:     cfg.WebhookTimeout,
		transport:   transport,
		client:      &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		ready:       make(chan *delivery),
		wake:        make(chan struct{}, 1),
		idle:        idle,
	}
}

// enqueue queues body under the delivery faults f.
func (q *hookQueue) enqueue(body []byte, f *Faults) {
	s := q.s
	s.counters.events.Add(1)
	if s.dice.chance(streamDrop, f.DropRate) {
		s.counters.fault(streamDrop)
		s.counters.dropped.Add(1)
		return
	}
	at := time.Now()
	if s.dice.chance(streamReorder, f.ReorderRate) {
		s.counters.fault(streamReorder)
		s.counters.reordered.Add(1)
		at = at.Add(f.ReorderDelay)
	}
	if f.DelayMax > 0 {
		s.counters.fault(streamDelay)
		s.counters.delayed.Add(1)
		at = at.Add(s.dice.duration(streamDelayAmount, f.DelayMax))
	}
	var sig string
	if q.secret != "" {
		sig = Sign(q.secret, body)
	}
	q.add(&delivery{body: body, signature: sig}, at)
	if s.dice.chance(streamDuplicate, f.DuplicateRate) {
		s.counters.fault(streamDuplicate)
		s.counters.duplicated.Add(1)
		q.add(&delivery{body: body, signature: sig}, at)
	}
}

// add queues a new delivery.
func (q *hookQueue) add(d *delivery, at time.Time) {
	q.s.counters.queued.Add(1)
	q.mu.Lock()
	if q.pending == 0 {
		q.idle = make(chan struct{})
	}
	q.pending++
	q.mu.Unlock()
	q.schedule(d, at)
}

// schedule (re)queues d for time at.
func (q *hookQueue) schedule(d *delivery, at time.Time) {
	q.mu.Lock()
	d.at = at
	q.seq++
	d.seq = q.seq
	heap.Push(&q.due, d)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// finish ends a delivery: delivered or given up.
func (q *hookQueue) finish() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending--
	if q.pending == 0 {
		close(q.idle)
	}
}

func (q *hookQueue) pendingCount() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(q.pending)
}

func (q *hookQueue) waitIdle(ctx context.Context) error {
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for webhook deliveries: %w", ctx.Err())
	}
}

func (q *hookQueue) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1 + q.concurrency)
	go func() {
		defer wg.Done()
		q.dispatch(ctx)
	}()
	for range q.concurrency {
		go func() {
			defer wg.Done()
			q.work(ctx)
		}()
	}
}

func (q *hookQueue) close() { q.transport.CloseIdleConnections() }

// dispatch hands each delivery to a worker once it is due, earliest first.
func (q *hookQueue) dispatch(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var next *delivery
		wait := time.Duration(-1)
		q.mu.Lock()
		if len(q.due) > 0 {
			if w := time.Until(q.due[0].at); w <= 0 {
				next = heap.Pop(&q.due).(*delivery)
			} else {
				wait = w
			}
		}
		q.mu.Unlock()
		if next != nil {
			select {
			case q.ready <- next:
				continue
			case <-ctx.Done():
				return
			}
		}
		var fire <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-fire:
		}
		timer.Stop()
	}
}

func (q *hookQueue) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-q.ready:
			q.deliver(ctx, d)
		}
	}
}

func (q *hookQueue) deliver(ctx context.Context, d *delivery) {
	err := q.post(ctx, d)
	if ctx.Err() != nil {
		return // closing: the delivery is abandoned
	}
	c := &q.s.counters
	if err == nil {
		c.delivered.Add(1)
		q.finish()
		return
	}
	c.failedAttempts.Add(1)
	d.attempts++
	if d.attempts >= q.maxAttempts {
		c.givenUp.Add(1)
		q.s.log.Warn("webhook given up", "attempts", d.attempts, "err", err)
		q.finish()
		return
	}
	wait := q.backoffAfter(d.attempts)
	q.s.log.Debug("webhook delivery failed", "attempt", d.attempts, "retry_in", wait, "err", err)
	q.schedule(d, time.Now().Add(wait))
}

// backoffAfter is the wait after the n-th failed attempt: WebhookBackoff
// doubled n-1 times, capped at MaxWebhookBackoff, with equal jitter (a
// random wait in [d/2, d)).
func (q *hookQueue) backoffAfter(n int) time.Duration {
	d := q.backoff
	for i := 1; i < n && d < MaxWebhookBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxWebhookBackoff)
	return d/2 + q.s.dice.duration(streamJitter, d-d/2)
}

// StatusError is a webhook delivery answered with a non-2xx status.
type StatusError struct{ StatusCode int }

func (e *StatusError) Error() string { return fmt.Sprintf("webhook answered HTTP %d", e.StatusCode) }

func (q *hookQueue) post(ctx context.Context, d *delivery) error {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url, bytes.NewReader(d.body))
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "ordersync-sim")
	if d.signature != "" {
		req.Header.Set(SignatureHeader, d.signature)
	}
	resp, err := q.client.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post webhook: %w", &StatusError{StatusCode: resp.StatusCode})
	}
	return nil
}

// deliveryHeap orders deliveries by due time, then by queueing order.
type deliveryHeap []*delivery

func (h deliveryHeap) Len() int { return len(h) }
func (h deliveryHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h deliveryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deliveryHeap) Push(x any)   { *h = append(*h, x.(*delivery)) }
func (h *deliveryHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return d
}
