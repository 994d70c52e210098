package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ordersync/ordersync/admin/api"
)

// Client calls the admin API of a running ordersync: the CLI's commands,
// the demo and the lab use it, so requests carry what the API's guard asks
// (a JSON content type on every write, the bearer token) in one place.
type Client struct {
	// BaseURL is the admin API, e.g. http://127.0.0.1:9090.
	BaseURL string
	// Token, when set, is sent as the bearer token.
	Token string
	// HTTP sends the requests; http.DefaultClient when nil.
	HTTP *http.Client
}

// Error is a non-2xx answer of the admin API, with its problem body when
// it had one.
type Error struct {
	Method, Path string
	Status       int
	Problem      api.Problem
}

func (e *Error) Error() string {
	if e.Problem.Title != "" {
		return fmt.Sprintf("%s %s: %s", e.Method, e.Path, e.Problem.Title)
	}
	return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
}

// ErrUnreachable is returned, wrapped, when no answer came at all.
var ErrUnreachable = errors.New("the admin API did not answer")

// maxAnswer bounds what a client reads of one answer.
const maxAnswer = 4 << 20

// Do sends one request with body (JSON-encoded, when not nil) and decodes a
// 2xx answer into out (when not nil). Any other answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s at %s: %w: %w", method, path, c.BaseURL, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Method: method, Path: path, Status: resp.StatusCode}
		_ = json.Unmarshal(b, &e.Problem)
		return e
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: unexpected answer: %w", method, path, err)
		}
	}
	return nil
}
