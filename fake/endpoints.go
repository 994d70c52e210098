package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Endpoints is merchants' fulfilment endpoints in memory: an
// http.RoundTripper that a dispatcher's http.Client uses in place of the
// network, for the tests of delivery logic that are not about sockets.
// Each endpoint URL answers as scripted (Script), 200 when nothing is;
// every request is recorded (Received) and a test waits for them on a
// signal (Wait), not a sleep.
type Endpoints struct {
	mu       sync.Mutex
	scripts  map[string][]Answer
	received map[string][]Request
	wake     chan struct{}
}

// Answer is one scripted answer: a status with its Retry-After and body,
// or, with Err, no answer at all (the client sees Err wrapped in a
// *url.Error, as from a refused connection). Hang holds the request until
// its context ends, as an endpoint that never answers.
type Answer struct {
	Status     int
	RetryAfter string
	Body       string
	Err        error
	Hang       bool
}

// Request is a delivery as an endpoint received it.
type Request struct {
	Method string
	Header http.Header
	Body   []byte
}

var _ http.RoundTripper = (*Endpoints)(nil)

// NewEndpoints returns endpoints that answer 200 to everything.
func NewEndpoints() *Endpoints {
	return &Endpoints{scripts: map[string][]Answer{}, received: map[string][]Request{}, wake: make(chan struct{})}
}

// Script queues answers for url (scheme, host and path, no query); once
// they are used up, the last one repeats.
func (e *Endpoints) Script(url string, answers ...Answer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scripts[url] = append(e.scripts[url], answers...)
}

// RoundTrip records the request and answers it as scripted.
func (e *Endpoints) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	url := req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
	e.mu.Lock()
	a := Answer{Status: http.StatusOK}
	if s := e.scripts[url]; len(s) > 0 {
		a = s[0]
		if len(s) > 1 {
			e.scripts[url] = s[1:]
		}
	}
	e.received[url] = append(e.received[url], Request{Method: req.Method, Header: req.Header.Clone(), Body: body})
	close(e.wake)
	e.wake = make(chan struct{})
	e.mu.Unlock()
	switch {
	case a.Hang:
		<-req.Context().Done()
		return nil, req.Context().Err()
	case a.Err != nil:
		return nil, a.Err
	}
	h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {strconv.Itoa(len(a.Body))}}
	if a.RetryAfter != "" {
		h.Set("Retry-After", a.RetryAfter)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", a.Status, http.StatusText(a.Status)), StatusCode: a.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(bytes.NewReader([]byte(a.Body))), ContentLength: int64(len(a.Body)), Request: req,
	}, nil
}

// Received is what url received so far, oldest first.
func (e *Endpoints) Received(url string) []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Request(nil), e.received[url]...)
}

// Wait returns what url received once it received at least n requests,
// or ctx's error.
func (e *Endpoints) Wait(ctx context.Context, url string, n int) ([]Request, error) {
	for {
		e.mu.Lock()
		got, wake := e.received[url], e.wake
		if len(got) >= n {
			out := append([]Request(nil), got...)
			e.mu.Unlock()
			return out, nil
		}
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d requests to %s: %w", n, url, ctx.Err())
		case <-wake:
		}
	}
}
