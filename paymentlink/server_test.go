package paymentlink_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync/paymentlink"
)

const testKey = "sk_test_0123456789abcdef"

// seenRequest is what the upstream received.
type seenRequest struct {
	Method  string
	Path    string // escaped, as on the wire
	Code    string // the {code} path value, unescaped
	Header  http.Header
	Body    []byte
	BodyErr error
}

// upstream is a real HTTP server on 127.0.0.1:0 standing in for the payment
// link service: it records every request and answers with handle.
type upstream struct {
	URL      string
	newConns atomic.Int64

	mu       sync.Mutex
	requests []seenRequest
	handle   http.HandlerFunc
}

// startUpstream serves handle until the test ends.
func startUpstream(t *testing.T, handle http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{handle: handle}
	mux := http.NewServeMux()
	mux.HandleFunc("/paymentlink/order/{code}", u.serve)
	mux.HandleFunc("/paymentlink/checkout", u.serve)
	mux.HandleFunc("/", u.serve)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := &http.Server{
		Handler: mux,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.newConns.Add(1)
			}
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-done
	})
	u.URL = "http://" + ln.Addr().String()
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, seenRequest{
		Method: r.Method, Path: r.URL.EscapedPath(), Code: r.PathValue("code"),
		Header: r.Header.Clone(), Body: body, BodyErr: err,
	})
	handle := u.handle
	u.mu.Unlock()
	handle(w, r)
}

func (u *upstream) seen() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.requests...)
}

// newClient returns a client of u with cfg's other settings.
func newClient(t *testing.T, u *upstream, cfg paymentlink.Config) *paymentlink.Client {
	t.Helper()
	cfg.BaseURL = u.URL
	if cfg.SecretKey == "" {
		cfg.SecretKey = testKey
	}
	c, err := paymentlink.New(cfg)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// fixture reads a recorded body from testdata.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

// reply answers with status and a recorded body (none when name is
// empty), plus header pairs.
func reply(t testing.TB, status int, name string, header ...string) http.HandlerFunc {
	t.Helper()
	var body []byte
	if name != "" {
		body = fixture(t, name)
	}
	ct := "application/json; charset=utf-8"
	switch {
	case strings.HasSuffix(name, ".html"):
		ct = "text/html"
	case strings.HasPrefix(name, "error-"):
		ct = "application/problem+json; charset=utf-8"
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		if name != "" {
			w.Header().Set("Content-Type", ct)
		}
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}
