package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

const testKey = "sk_test_4f9c2d"

// testSim is a simulator served on a random loopback port.
type testSim struct {
	*Server
	url    string
	client *http.Client
}

// startSim builds, starts and serves a simulator that is closed when the
// test ends. Seed defaults to 1 and SecretKey to testKey.
func startSim(t testing.TB, cfg Config) *testSim {
	t.Helper()
	if cfg.SecretKey == "" {
		cfg.SecretKey = testKey
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	u, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &testSim{Server: s, url: u, client: &http.Client{Timeout: 10 * time.Second}}
}

// call sends one request; a key of "" sends no Authorization header.
func (ts *testSim) call(t testing.TB, method, path, key string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := ts.do(method, path, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// do is call for goroutines other than the test's, which must not FailNow.
func (ts *testSim) do(method, path, key string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("new request: %w", err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s %s: %w", method, path, err)
	}
	return resp, b, nil
}

// doJSON sends a request and decodes a 200 answer into v.
func (ts *testSim) doJSON(method, path, key string, body []byte, v any) error {
	resp, b, err := ts.do(method, path, key, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d %s", method, path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: decode %s: %w", method, path, b, err)
	}
	return nil
}

// checkout creates an order over HTTP and fails the test unless it is 200.
func (ts *testSim) checkout(t testing.TB, params ordersync.PaymentLinkParams) ordersync.PaymentLinkResult {
	t.Helper()
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatalf("encode params: %v", err)
	}
	resp, b := ts.call(t, http.MethodPost, "/paymentlink/checkout", testKey, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("checkout: HTTP %d %s", resp.StatusCode, b)
	}
	var res ordersync.PaymentLinkResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("decode checkout result %s: %v", b, err)
	}
	return res
}

// getOrder fetches an order detail over HTTP and fails the test unless it is
// 200; it returns the raw document too.
func (ts *testSim) getOrder(t testing.TB, code string) (*ordersync.Order, []byte) {
	t.Helper()
	resp, b := ts.call(t, http.MethodGet, "/paymentlink/order/"+code, testKey, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("get order %s: HTTP %d %s", code, resp.StatusCode, b)
	}
	o, err := ordersync.DecodeOrder(b)
	if err != nil {
		t.Fatalf("decode order %s: %v", b, err)
	}
	return o, b
}

func amountParams(amount string) ordersync.PaymentLinkParams {
	a := ordersync.MustAmount(amount)
	return ordersync.PaymentLinkParams{Amount: &a}
}

func decodeProblem(t testing.TB, b []byte) (Problem, map[string]json.RawMessage) {
	t.Helper()
	var p Problem
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("decode problem %s: %v", b, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("decode problem %s: %v", b, err)
	}
	return p, raw
}

// fakeClock is an injectable Clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// hook is a webhook as the receiver got it.
type hook struct {
	body      []byte
	signature string
}

// receiver is a real HTTP webhook endpoint on loopback that records every
// attempt and answers what respond says (attempt counts from 1; a status of
// 0 drops the connection without an answer).
type receiver struct {
	url     string
	respond func(attempt int) int

	mu       sync.Mutex
	attempts []hook
	accepted []hook
}

func newReceiver(t testing.TB, respond func(attempt int) int) *receiver {
	t.Helper()
	r := &receiver{respond: respond}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/webhooks/paymentlink"
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h := hook{body: body, signature: req.Header.Get(SignatureHeader)}
	r.mu.Lock()
	r.attempts = append(r.attempts, h)
	n := len(r.attempts)
	r.mu.Unlock()
	status := http.StatusOK
	if r.respond != nil {
		status = r.respond(n)
	}
	if status == 0 {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
		return
	}
	if status/100 == 2 {
		r.mu.Lock()
		r.accepted = append(r.accepted, h)
		r.mu.Unlock()
	}
	w.WriteHeader(status)
}

// hooks returns the accepted webhooks in arrival order.
func (r *receiver) hooks() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.accepted...)
}

func (r *receiver) allAttempts() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.attempts...)
}

func waitIdle(t testing.TB, s *testSim) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v (stats %+v)", err, s.Stats().Webhooks)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
