// Package paymentlink is the client of the payment link service, interface
// version 2.0: it creates payment links (POST /paymentlink/checkout) and
// fetches order details (GET /paymentlink/order/{orderCode}).
//
// Every failure is an *ordersync.UpstreamError whose Kind says what the
// caller should do about it (retry, wait, pause, give up), except the
// caller's own cancellation, which comes back as the context's error. The
// client keeps connections alive and reuses them across goroutines: the
// worker fetches from many goroutines at once.
package paymentlink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersync/ordersync"
)

// Defaults of Config.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultUserAgent = "ordersync-paymentlink/2.0"
)

// MaxBodyBytes bounds how much of a response the client reads. An order
// detail is a few kilobytes; anything near this is not one.
const MaxBodyBytes = 4 << 20

// maxIdleConnsPerHost keeps enough idle connections for the worker's
// fetching goroutines; net/http's default of 2 would open and close a
// connection for almost every request under load.
const maxIdleConnsPerHost = 256

// ErrTimeout is wrapped by the transport error of a request that got no
// complete answer within Config.Timeout. It is deliberately not
// context.DeadlineExceeded: context errors mean the caller gave up.
var ErrTimeout = errors.New("no complete answer in time")

// Config configures a Client.
type Config struct {
	// BaseURL is the service's absolute http(s) URL, with or without a path
	// prefix: "https://api.example.com" or "https://example.com/v2".
	BaseURL string
	// SecretKey is sent as "Authorization: Bearer <SecretKey>". Never logged.
	SecretKey string
	// Timeout bounds each request, body included (default 10s).
	Timeout time.Duration
	// HTTPClient, when set, is used as is (its transport, redirects and
	// timeout). By default the client builds one that keeps up to 256 idle
	// connections per host and does not follow redirects.
	HTTPClient *http.Client
	// UserAgent defaults to DefaultUserAgent.
	UserAgent string
}

func (c *Config) withDefaults() Config {
	cfg := *c
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient()
	}
	return cfg
}

func (c *Config) validate() error {
	if c.BaseURL == "" {
		return errors.New("paymentlink: Config.BaseURL is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("paymentlink: Config.BaseURL %q: want an absolute http or https URL", c.BaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("paymentlink: Config.BaseURL %q: want no query, fragment or user info", c.BaseURL)
	}
	if err := CheckSecretKey(c.SecretKey); err != nil {
		return fmt.Errorf("paymentlink: Config.SecretKey: %w", err)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("paymentlink: Config.Timeout %s: must not be negative", c.Timeout)
	}
	return nil
}

func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 4 * maxIdleConnsPerHost
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{
		Transport: t,
		// A redirect is a misconfigured BaseURL (http → https, a moved
		// host); following it would turn the POST into a GET or drop the
		// key. Report it instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckSecretKey refuses a key that cannot go in an Authorization header.
func CheckSecretKey(key string) error {
	if key == "" {
		return errors.New("the secret key is required")
	}
	if strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errors.New("the secret key contains control characters")
	}
	return nil
}

// Client calls the payment link service. It is safe for concurrent use.
type Client struct {
	http        *http.Client
	timeout     time.Duration
	userAgent   string
	auth        atomic.Pointer[string] // "Bearer " and the key; see SetSecretKey
	checkoutURL string
	orderURL    string // followed by the escaped order code
}

var _ ordersync.Upstream = (*Client)(nil)

// New returns a client of the service at cfg.BaseURL.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	base := strings.TrimRight(cfg.BaseURL, "/")
	c := &Client{
		http:        cfg.HTTPClient,
		timeout:     cfg.Timeout,
		userAgent:   cfg.UserAgent,
		checkoutURL: base + "/paymentlink/checkout",
		orderURL:    base + "/paymentlink/order/",
	}
	auth := "Bearer " + cfg.SecretKey
	c.auth.Store(&auth)
	return c, nil
}

// SetSecretKey replaces the key the next request sends (a rotated key);
// requests already sent finish with the old one.
func (c *Client) SetSecretKey(key string) error {
	if err := CheckSecretKey(key); err != nil {
		return fmt.Errorf("paymentlink: %w", err)
	}
	auth := "Bearer " + key
	c.auth.Store(&auth)
	return nil
}

// CloseIdleConnections closes the connections kept for reuse.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// CreatePaymentLink creates an order and its hosted payment link. Params that
// break a rule of the interface are refused without a request, with the
// same *ordersync.UpstreamError (Kind UpstreamValidation) the service would
// answer.
func (c *Client) CreatePaymentLink(ctx context.Context, params ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	const op = "create payment link"
	if err := params.Validate(ordersync.English); err != nil {
		var ve *ordersync.ValidationError
		errors.As(err, &ve)
		return nil, &ordersync.UpstreamError{Kind: ordersync.UpstreamValidation, Op: op, Validation: ve}
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, &ordersync.UpstreamError{Kind: ordersync.UpstreamValidation, Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	var res ordersync.PaymentLinkResult
	err = c.do(ctx, op, http.MethodPost, c.checkoutURL, body, func(doc []byte) error {
		if err := json.Unmarshal(doc, &res); err != nil {
			return fmt.Errorf("decode checkout result: %w", err)
		}
		if res.OrderCode == "" {
			return errors.New("decode checkout result: no orderCode")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// GetOrder fetches the order detail of orderCode, with Order.Raw holding the
// document as received.
func (c *Client) GetOrder(ctx context.Context, orderCode string) (*ordersync.Order, error) {
	if strings.TrimSpace(orderCode) == "" || orderCode == "." || orderCode == ".." {
		return nil, &ordersync.UpstreamError{
			Kind: ordersync.UpstreamValidation,
			Op:   "get order",
			Validation: &ordersync.ValidationError{
				Title:  "invalid order code",
				Fields: map[string][]string{"orderCode": {"The field is required and must be an order code."}},
			},
		}
	}
	op := "get order " + orderCode
	var order *ordersync.Order
	err := c.do(ctx, op, http.MethodGet, c.orderURL+url.PathEscape(orderCode), nil, func(doc []byte) error {
		o, err := ordersync.DecodeOrder(doc)
		if err != nil {
			return err
		}
		switch o.OrderCode {
		case "":
			// Tolerated: the code is the one asked for.
			o.OrderCode = orderCode
		case orderCode:
		default:
			return fmt.Errorf("asked for order %s, got order %s", orderCode, clip(o.OrderCode))
		}
		order = o
		return nil
	})
	if err != nil {
		return nil, err
	}
	return order, nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// do sends one request and hands a 2xx body to decode; every other outcome
// becomes an *ordersync.UpstreamError, or the caller's context error.
func (c *Client) do(ctx context.Context, op, method, target string, body []byte, decode func([]byte) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	reqCtx, cancel := context.WithTimeoutCause(ctx, c.timeout, ErrTimeout)
	defer cancel()

	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(reqCtx, method, target, rd)
	if err != nil {
		return &ordersync.UpstreamError{Kind: ordersync.UpstreamProtocol, Op: op, Err: fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Authorization", *c.auth.Load())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, reqCtx, op, err)
	}
	defer resp.Body.Close()

	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	if resp.ContentLength > 0 && resp.ContentLength <= MaxBodyBytes {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	_, readErr := buf.ReadFrom(io.LimitReader(resp.Body, MaxBodyBytes+1))
	tooLarge := buf.Len() > MaxBodyBytes
	if tooLarge {
		buf.Truncate(MaxBodyBytes)
	}

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		switch {
		case readErr != nil:
			return c.transportError(ctx, reqCtx, op, fmt.Errorf("read body: %w", readErr))
		case tooLarge:
			return &ordersync.UpstreamError{Kind: ordersync.UpstreamProtocol, Op: op, StatusCode: resp.StatusCode,
				Err: fmt.Errorf("body larger than %d bytes", MaxBodyBytes)}
		}
		if err := decode(buf.Bytes()); err != nil {
			return &ordersync.UpstreamError{Kind: ordersync.UpstreamProtocol, Op: op, StatusCode: resp.StatusCode, Err: clipError(err)}
		}
		return nil
	}
	// An error answer cut short still says what went wrong; only the
	// caller's cancellation overrides it.
	if readErr != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return statusError(op, resp, buf.Bytes(), time.Now())
}

// transportError tells the caller's cancellation from everything else.
func (c *Client) transportError(ctx, reqCtx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	if errors.Is(context.Cause(reqCtx), ErrTimeout) {
		err = fmt.Errorf("%w within %s", ErrTimeout, c.timeout)
	} else if ue := (*url.Error)(nil); errors.As(err, &ue) {
		// The Op already names the call; the URL would repeat it.
		err = ue.Err
	}
	return &ordersync.UpstreamError{Kind: ordersync.UpstreamTransport, Op: op, Err: err}
}
