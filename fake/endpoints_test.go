package fake_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/fake"
)

// endpointSide is one way to reach a fulfilment endpoint: through
// fake.Endpoints in place of the network, or over loopback to an httptest
// server.
type endpointSide struct {
	client   func(timeout time.Duration) *http.Client
	url      string // an endpoint that answers as scripted
	refused  string // an endpoint where nothing listens
	script   func(answers ...fake.Answer)
	received func() []fake.Request
}

// TestEndpointsContract holds fake.Endpoints to what a dispatcher's
// http.Client sees from a real endpoint over loopback: the same cases, the
// same answers and the same errors.
func TestEndpointsContract(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) endpointSide
	}{
		{"fake", openFakeEndpoints},
		{"httptest", openHTTPEndpoint},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Run("SignedDelivery", func(t *testing.T) { endpointSignedDelivery(t, c.open(t)) })
			t.Run("Refusals", func(t *testing.T) { endpointRefusals(t, c.open(t)) })
			t.Run("NoAnswer", func(t *testing.T) { endpointNoAnswer(t, c.open(t)) })
		})
	}
}

func openFakeEndpoints(*testing.T) endpointSide {
	e := fake.NewEndpoints()
	const url, refused = "https://crm.example/hooks", "https://down.example/hooks"
	e.Script(refused, fake.Answer{Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})
	return endpointSide{
		client:   func(timeout time.Duration) *http.Client { return &http.Client{Transport: e, Timeout: timeout} },
		url:      url,
		refused:  refused,
		script:   func(answers ...fake.Answer) { e.Script(url, answers...) },
		received: func() []fake.Request { return e.Received(url) },
	}
}

// openHTTPEndpoint serves the script from a real server; the refused URL
// is a listener closed before the test.
func openHTTPEndpoint(t *testing.T) endpointSide {
	var (
		mu       sync.Mutex
		answers  []fake.Answer
		received []fake.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		a := fake.Answer{Status: http.StatusOK}
		if len(answers) > 0 {
			a = answers[0]
			if len(answers) > 1 {
				answers = answers[1:]
			}
		}
		received = append(received, fake.Request{Method: r.Method, Header: r.Header.Clone(), Body: body})
		mu.Unlock()
		if a.Hang {
			<-r.Context().Done()
			return
		}
		if a.RetryAfter != "" {
			w.Header().Set("Retry-After", a.RetryAfter)
		}
		w.WriteHeader(a.Status)
		io.WriteString(w, a.Body)
	}))
	t.Cleanup(srv.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/hooks"
	l.Close()
	return endpointSide{
		client: func(timeout time.Duration) *http.Client {
			c := &http.Client{Timeout: timeout}
			t.Cleanup(c.CloseIdleConnections)
			return c
		},
		url:     srv.URL + "/hooks",
		refused: refused,
		script: func(as ...fake.Answer) {
			mu.Lock()
			defer mu.Unlock()
			answers = append(answers, as...)
		},
		received: func() []fake.Request {
			mu.Lock()
			defer mu.Unlock()
			return append([]fake.Request(nil), received...)
		},
	}
}

func post(t *testing.T, c *http.Client, url string, body []byte, header http.Header) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return resp, string(answer), nil
}

// endpointSignedDelivery: a signed delivery arrives with its body and
// headers intact, verifiable with the endpoint's secret, and its answer
// comes back.
func endpointSignedDelivery(t *testing.T, s endpointSide) {
	secret, err := delivery.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"order.paid","data":{"orderCode":"Ab12Cd3"}}`)
	h := http.Header{}
	if err := delivery.Sign(h, "msg_contract", time.Now(), body, secret); err != nil {
		t.Fatal(err)
	}
	s.script(fake.Answer{Status: http.StatusOK, Body: "thanks"})
	resp, answer, err := post(t, s.client(5*time.Second), s.url, body, h)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	if resp.StatusCode != http.StatusOK || answer != "thanks" {
		t.Errorf("answer %d %q, want 200 thanks", resp.StatusCode, answer)
	}
	got := s.received()
	if len(got) != 1 || got[0].Method != http.MethodPost || string(got[0].Body) != string(body) {
		t.Fatalf("received %+v, want the one POST with its body", got)
	}
	if err := delivery.Verify(secret, got[0].Header, got[0].Body, 5*time.Minute); err != nil {
		t.Errorf("the received delivery does not verify: %v", err)
	}
	if got[0].Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", got[0].Header.Get("Content-Type"))
	}
}

// endpointRefusals: statuses, Retry-After and bodies of refusals reach the
// client as sent, in the order scripted; a URL where nothing listens is a
// *url.Error of a refused connection, not a timeout.
func endpointRefusals(t *testing.T, s endpointSide) {
	s.script(fake.Answer{Status: http.StatusTooManyRequests, RetryAfter: "7"},
		fake.Answer{Status: http.StatusServiceUnavailable, RetryAfter: "Wed, 21 Oct 2026 07:28:00 GMT", Body: "maintenance"},
		fake.Answer{Status: http.StatusGone})
	c := s.client(5 * time.Second)
	for _, want := range []struct {
		status     int
		retryAfter string
		body       string
	}{
		{429, "7", ""},
		{503, "Wed, 21 Oct 2026 07:28:00 GMT", "maintenance"},
		{410, "", ""},
		{410, "", ""}, // the last answer repeats
	} {
		resp, answer, err := post(t, c, s.url, []byte(`{}`), nil)
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		if resp.StatusCode != want.status || resp.Header.Get("Retry-After") != want.retryAfter || answer != want.body {
			t.Errorf("answer %d, Retry-After %q, body %q; want %d, %q, %q", resp.StatusCode, resp.Header.Get("Retry-After"), answer,
				want.status, want.retryAfter, want.body)
		}
	}
	_, _, err := post(t, c, s.refused, []byte(`{}`), nil)
	var uerr *url.Error
	var nerr net.Error
	if !errors.As(err, &uerr) || !errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &nerr) && nerr.Timeout()) {
		t.Errorf("posting where nothing listens: %v, want a *url.Error of a refused connection, not a timeout", err)
	}
}

// endpointNoAnswer: an endpoint that never answers is the client's
// timeout, which the dispatcher tells from a refusal.
func endpointNoAnswer(t *testing.T, s endpointSide) {
	s.script(fake.Answer{Hang: true})
	_, _, err := post(t, s.client(100*time.Millisecond), s.url, []byte(`{}`), nil)
	var nerr net.Error
	if err == nil || !errors.As(err, &nerr) || !nerr.Timeout() {
		t.Errorf("an endpoint that never answers: %v, want a timeout", err)
	}
}
