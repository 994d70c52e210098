package paymentlink

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/retryafter"
)

// Retry-After handling.
const (
	// DefaultRetryAfter is the wait of a 429 that does not say how long.
	DefaultRetryAfter = time.Second
	// MaxRetryAfter caps the wait a response may ask for: one answer, from
	// the service or a confused proxy in front of it, stops every fetch of
	// the account until then. Five minutes outlasts a per-minute rate-limit
	// window; a service still limiting after that says so again.
	MaxRetryAfter = 5 * time.Minute
)

// Bounds of the upstream text an error carries: errors reach the admin
// API's answers and the logs, and a hostile or broken upstream must not
// fill either.
const (
	// maxTextLen is the most bytes of one upstream string (a problem's
	// title, a field name, a message, a header).
	maxTextLen = 200
	// maxFields is the most fields of a validation error kept, and
	// maxMessages the most messages kept per field.
	maxFields   = 10
	maxMessages = 3
)

// snippetLen is how much of a body that is not problem JSON goes into an
// error: enough to read "502 Bad Gateway" out of a proxy's page.
const snippetLen = 160

// problem is an RFC 7807 problem body as the service writes it. Field names
// match in any case (encoding/json does that); errors is kept raw because
// its shape varies between deployments.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	// Message is not RFC 7807, but gateways write it.
	Message string          `json:"message"`
	Errors  json.RawMessage `json:"errors"`
}

// decodeProblem reads a problem body. ok is false when the body is not a
// JSON object.
func decodeProblem(body []byte) (p problem, ok bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return p, false
	}
	if err := json.Unmarshal(trimmed, &p); err != nil {
		return problem{}, false
	}
	return p, true
}

// fieldErrors reads the errors member: {field: [messages]}, {field: message},
// or a bare list of messages. Field names are brought to the request's own
// spelling ("LineItems[0].Quantity" → "lineItems[0].quantity").
func fieldErrors(raw json.RawMessage) map[string][]string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	fields := map[string][]string{}
	var byField map[string]json.RawMessage
	var list []json.RawMessage
	switch {
	case json.Unmarshal(raw, &byField) == nil:
		for name, v := range byField {
			if msgs := messages(v); len(msgs) > 0 {
				key := clip(canonicalField(name))
				if _, seen := fields[key]; !seen && len(fields) >= maxFields {
					continue
				}
				fields[key] = append(fields[key], msgs...)
			}
		}
	case json.Unmarshal(raw, &list) == nil:
		for _, v := range list {
			fields["request"] = append(fields["request"], messages(v)...)
		}
	default:
		fields["request"] = messages(raw)
	}
	if len(fields) == 0 {
		return nil
	}
	for k, msgs := range fields {
		msgs = msgs[:min(len(msgs), maxMessages)]
		for i := range msgs {
			msgs[i] = clip(msgs[i])
		}
		fields[k] = msgs
	}
	return fields
}

// clip bounds one upstream string to maxTextLen bytes of valid UTF-8.
func clip(s string) string { return ordersync.Clip(s, maxTextLen) }

// clippedError bounds the message of an error whose text may carry
// upstream data (a decoding error quoting the body); errors.Is and As
// still see the error itself.
type clippedError struct{ err error }

func (e clippedError) Error() string { return clip(e.err.Error()) }
func (e clippedError) Unwrap() error { return e.err }

// clipError bounds err's message; nil stays nil.
func clipError(err error) error {
	if err == nil {
		return nil
	}
	return clippedError{err}
}

// messages reads a message, a list of messages, or anything else as its
// JSON text.
func messages(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	var s string
	var list []json.RawMessage
	switch {
	case len(raw) == 0, bytes.Equal(raw, []byte("null")):
		return nil
	case json.Unmarshal(raw, &s) == nil:
		return []string{s}
	case json.Unmarshal(raw, &list) == nil:
		out := make([]string, 0, len(list))
		for _, v := range list {
			out = append(out, messages(v)...)
		}
		return out
	default:
		return []string{string(raw)}
	}
}

// requestFields are the JSON names of PaymentLinkParams and its parts.
var requestFields = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"lineItems", "amount", "orderReference", "orderName", "orderDescription", "successUrl", "cancelUrl",
		"locationCode", "metadata", "expirationMinutes", "sku", "product", "quantity", "name", "price",
		"imageUrl", "requiresShipping", "value", "orderCode",
	} {
		m[strings.ToLower(n)] = n
	}
	return m
}()

// canonicalField respells a field path the way the request writes it:
// "$.LineItems[0].Product.ImageUrl" → "lineItems[0].product.imageUrl".
// Unknown segments only get a lower-case first letter.
func canonicalField(name string) string {
	name = strings.TrimPrefix(strings.TrimSpace(name), "$.")
	segs := strings.Split(name, ".")
	for i, seg := range segs {
		base, index := seg, ""
		if j := strings.IndexByte(seg, '['); j >= 0 {
			base, index = seg[:j], seg[j:]
		}
		if known, ok := requestFields[strings.ToLower(base)]; ok {
			base = known
		} else if r, n := utf8.DecodeRuneInString(base); n > 0 && unicode.IsUpper(r) {
			base = string(unicode.ToLower(r)) + base[n:]
		}
		segs[i] = base + index
	}
	return strings.Join(segs, ".")
}

// statusError turns a non-2xx answer into an *ordersync.UpstreamError.
func statusError(op string, resp *http.Response, body []byte, now time.Time) *ordersync.UpstreamError {
	e := &ordersync.UpstreamError{Op: op, StatusCode: resp.StatusCode}
	p, isProblem := decodeProblem(body)
	if isProblem {
		e.ProblemType, e.Title = clip(p.Type), clip(cmp.Or(p.Title, p.Detail, p.Message))
	}
	if s := snippet(body); s != "" && e.Title == "" && e.ProblemType == "" {
		e.Err = fmt.Errorf("%s body: %q", clip(mediaType(resp)), s)
	}

	code := resp.StatusCode
	switch {
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		e.Kind = ordersync.UpstreamValidation
		title := e.Title
		if title == "" {
			title = fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
		}
		e.Validation = &ordersync.ValidationError{Title: title, Fields: fieldErrors(p.Errors)}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Kind = ordersync.UpstreamUnauthorized
	case code == http.StatusNotFound:
		e.Kind = ordersync.UpstreamNotFound
	case code == http.StatusTooManyRequests:
		e.Kind = ordersync.UpstreamRateLimited
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			e.RetryAfter = d
		} else {
			e.RetryAfter = DefaultRetryAfter
		}
	case code >= 500 && code <= 599:
		e.Kind = ordersync.UpstreamServer
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			e.RetryAfter = d
		}
	default:
		e.Kind = ordersync.UpstreamProtocol
		if loc := resp.Header.Get("Location"); loc != "" && code >= 300 && code < 400 {
			e.Err = errors.Join(fmt.Errorf("redirected to %s: check the base URL", clip(loc)), e.Err)
		} else if e.Err == nil {
			e.Err = fmt.Errorf("unexpected status %s", clip(resp.Status))
		}
	}
	return e
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP-date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	return retryafter.Parse(v, now, MaxRetryAfter)
}

// snippet is the start of a body that is not problem JSON, as readable text:
// tags dropped, white space collapsed, cut at snippetLen runes.
func snippet(body []byte) string {
	var b strings.Builder
	inTag, space := false, false
	n := 0
	for len(body) > 0 && n < snippetLen {
		r, size := utf8.DecodeRune(body)
		body = body[size:]
		switch {
		case r == '<':
			inTag, space = true, true
			continue
		case r == '>' && inTag:
			inTag = false
			continue
		case inTag:
			continue
		case unicode.IsSpace(r) || r == utf8.RuneError || !unicode.IsPrint(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func mediaType(resp *http.Response) string {
	ct := resp.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	if ct = strings.TrimSpace(ct); ct == "" {
		return "unexpected"
	}
	return ct
}
