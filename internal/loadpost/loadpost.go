// Package loadpost posts signed webhooks for the load generators: the
// loadtest and multiproc commands and the receiver's benchmark.
//
// A load generator that runs on the machine it measures must spend as
// little of it as it can, so it uses fasthttp's client, as load tools such
// as bombardier do: its cost per request is a fraction of net/http's. The
// service under test keeps net/http.
package loadpost

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
)

// Config says where and how to post.
type Config struct {
	// URL of the webhook endpoint.
	URL string
	// Connections is how many keep-alive connections carry the posts; a
	// post waits while all are busy.
	Connections int
	// SignatureHeader is set to Sign(body) on every post.
	SignatureHeader string
	Sign            func(body []byte) string
	// Timeout bounds one post, from waiting for a connection to the end of
	// the answer. Default 30s.
	Timeout time.Duration
}

// Poster posts signed bodies. It is safe for concurrent use.
type Poster struct {
	cfg    Config
	client *fasthttp.Client
}

// New returns a Poster for cfg.
func New(cfg Config) (*Poster, error) {
	switch {
	case cfg.URL == "":
		return nil, errors.New("loadpost: URL is required")
	case cfg.Connections < 1:
		return nil, fmt.Errorf("loadpost: Connections must be at least 1, got %d", cfg.Connections)
	case cfg.SignatureHeader == "" || cfg.Sign == nil:
		return nil, errors.New("loadpost: SignatureHeader and Sign are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &Poster{cfg: cfg, client: &fasthttp.Client{
		MaxConnsPerHost:     cfg.Connections,
		MaxConnWaitTimeout:  cfg.Timeout,
		MaxIdleConnDuration: 30 * time.Second,
	}}, nil
}

// Post sends body and returns the answer's status code.
func (p *Poster) Post(body []byte) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer func() {
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}()
	req.SetRequestURI(p.cfg.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json; charset=utf-8")
	req.Header.Set(p.cfg.SignatureHeader, p.cfg.Sign(body))
	req.SetBodyRaw(body)
	if err := p.client.DoTimeout(req, resp, p.cfg.Timeout); err != nil {
		return 0, fmt.Errorf("post to %s: %w", p.cfg.URL, err)
	}
	return resp.StatusCode(), nil
}

// Close closes the idle connections.
func (p *Poster) Close() { p.client.CloseIdleConnections() }
