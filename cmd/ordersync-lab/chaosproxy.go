package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/httpstatus"
	"github.com/ordersync/ordersync/webhook"
)

// recordingProxy stands in front of the pipeline's webhook receiver and
// remembers the MsgID of every body the receiver answered 2xx: what the
// provider was promised is durable.
type recordingProxy struct {
	ln     net.Listener
	srv    *http.Server
	proxy  *httputil.ReverseProxy
	target atomic.Pointer[url.URL]
	done   chan struct{}

	attempts, failures atomic.Int64
	mu                 sync.Mutex
	acked              map[string][]byte // MsgID → body

	// gated makes the proxy a load balancer behind a readiness probe:
	// while its verdict is not ready it answers 503 itself, as a balancer
	// with no ready backend does, and forwards nothing (restart.go).
	gated atomic.Bool
	// readyUntil (Unix ns) is the probe's verdict in one word, so that a
	// reader never sees one probe's answer with another's bound: until
	// when the last "ready" holds, its send time plus the pipeline's drain
	// (math.MaxInt64: no bound); 0 when the last probe said not ready. The
	// drain promises an open listener only that long after a 200, so past
	// it the gate holds back as if not ready, however late the next probe
	// comes back on a loaded machine.
	readyUntil atomic.Int64
	// heldBack counts webhooks answered 503 by the gate; refusedWhileReady
	// the ones forwarded while the gate said ready that met a closed port
	// or another connection error, with the first few errors.
	// rejectedWhileReady the ones the receiver answered with another
	// status than 2xx.
	heldBack, refusedWhileReady, rejectedWhileReady atomic.Int64
	refusals                                        []string
}

func startRecordingProxy() (*recordingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("recording proxy: %w", err)
	}
	p := &recordingProxy{ln: ln, acked: map[string][]byte{}, done: make(chan struct{})}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := p.target.Load()
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path = t.Scheme, t.Host, t.Path
			pr.Out.Host = ""
		},
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// A refusal on loopback comes at once: at the dial, within
			// the verdict's life, or the verdict had expired.
			if p.gated.Load() && p.readyNow() {
				p.refusedWhileReady.Add(1)
				p.mu.Lock()
				if len(p.refusals) < 5 {
					p.refusals = append(p.refusals, err.Error())
				}
				p.mu.Unlock()
			}
			w.WriteHeader(http.StatusBadGateway) // the pipeline is down
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is where the simulator posts webhooks.
func (p *recordingProxy) URL() string {
	return "http://" + p.ln.Addr().String() + "/webhooks/paymentlink"
}

// SetTarget points the proxy at the receiver's URL.
func (p *recordingProxy) SetTarget(webhookURL string) {
	u, err := url.Parse(webhookURL)
	if err != nil {
		panic(err) // built by child.WebhookURL
	}
	p.target.Store(u)
}

// readyNow is the gate's verdict: the probe said ready and that has not
// expired.
func (p *recordingProxy) readyNow() bool {
	return time.Now().UnixNano() < p.readyUntil.Load()
}

// probed records a probe's verdict: ready until the given time, or not
// ready.
func (p *recordingProxy) probed(ready bool, until time.Time) {
	if !ready {
		p.readyUntil.Store(0)
		return
	}
	p.readyUntil.Store(until.UnixNano())
}

func (p *recordingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.attempts.Add(1)
	if p.gated.Load() && !p.readyNow() {
		p.heldBack.Add(1)
		p.failures.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		p.failures.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	sw := &httpstatus.Writer{ResponseWriter: w}
	p.proxy.ServeHTTP(sw, r)
	if sw.Code >= 200 && sw.Code < 300 {
		id := webhook.MsgID(ordersync.DefaultAccount, body)
		p.mu.Lock()
		p.acked[id] = body
		p.mu.Unlock()
		return
	}
	p.failures.Add(1)
	if p.gated.Load() && sw.Code != http.StatusBadGateway {
		p.rejectedWhileReady.Add(1)
	}
}

// Acked returns the MsgIDs answered 2xx so far, with their bodies.
func (p *recordingProxy) Acked() map[string][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]byte, len(p.acked))
	for id, body := range p.acked {
		out[id] = body
	}
	return out
}

// Close stops the proxy and waits for it.
func (p *recordingProxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		p.srv.Close()
	}
	<-p.done
	p.proxy.Transport.(*http.Transport).CloseIdleConnections()
}
