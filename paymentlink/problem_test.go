package paymentlink

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ordersync/ordersync"
)

func TestCanonicalField(t *testing.T) {
	tests := map[string]string{
		"amount":                          "amount",
		"Amount":                          "amount",
		"$.Amount":                        "amount",
		"LineItems[0].Quantity":           "lineItems[0].quantity",
		"lineitems[2].product.IMAGEURL":   "lineItems[2].product.imageUrl",
		"LINEITEMS[1].SKU":                "lineItems[1].sku",
		"Metadata[0].Name":                "metadata[0].name",
		"SuccessUrl":                      "successUrl",
		"CustomerNote":                    "customerNote",
		" orderReference ":                "orderReference",
		"":                                "",
		"ÉxitoUrl":                        "éxitoUrl",
		"lineItems[0].Product.Extra.Deep": "lineItems[0].product.extra.deep",
	}
	for in, want := range tests {
		if got := canonicalField(in); got != want {
			t.Errorf("canonicalField(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 12 ", 12 * time.Second, true},
		{"-3", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"99999999999999999999", 0, false}, // overflows uint64
		{"86400", MaxRetryAfter, true},
		{"999999999", 5 * time.Minute, true},
		{"300", 5 * time.Minute, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
		{"Sat, 10 Oct 2026 18:00:30 GMT", 30 * time.Second, true},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %s, %v, want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSnippet(t *testing.T) {
	tests := map[string]string{
		"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>x</body></html>": "502 Bad Gateway x",
		"plain   text\r\n\twith space": "plain text with space",
		"":                             "",
		"<only><tags/>":                "",
		"bad \xff\xfe utf-8":           "bad utf-8",
		strings.Repeat("a", 1000):      strings.Repeat("a", snippetLen),
	}
	for in, want := range tests {
		if got := snippet([]byte(in)); got != want {
			t.Errorf("snippet(%.30q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzStatusError: any error body, with any status, gives an error of a known
// kind with a short, valid message and never panics.
func FuzzStatusError(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "error-*"))
	if err != nil {
		f.Fatal(err)
	}
	for i, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(b), []int{400, 401, 404, 429, 500, 502, 503, 409}[i%8], "")
	}
	f.Add([]byte(`{"errors":["a",1,{"x":null}]}`), 400, "")
	f.Add([]byte(`{"errors":"just one"}`), 422, "")
	f.Add([]byte(`{"Errors":{"A":[["nested"]],"B":null,"C":3}}`), 400, "3")
	f.Add([]byte(`<h1>busy</h1>`), 429, "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Fuzz(func(t *testing.T, body []byte, status int, retry string) {
		if status < 300 || status > 599 {
			return
		}
		resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Retry-After": {retry}}}
		e := statusError("get order x", resp, body, time.Now())
		if e.Kind == "" || e.StatusCode != status {
			t.Fatalf("error %+v", e)
		}
		if e.RetryAfter < 0 || e.RetryAfter > MaxRetryAfter {
			t.Fatalf("RetryAfter %s", e.RetryAfter)
		}
		if (status == 400 || status == 422) != (e.Validation != nil) {
			t.Fatalf("validation %v for status %d", e.Validation, status)
		}
		msg := e.Error()
		if !utf8.ValidString(msg) && utf8.Valid(body) {
			t.Fatalf("message %q is not UTF-8", msg)
		}
		checkBounded(t, e)
	})
}

// checkBounded fails unless every upstream string in e is within the
// bounds an answer or a log line may carry, whatever the body was.
func checkBounded(t *testing.T, e *ordersync.UpstreamError) {
	t.Helper()
	const text = maxTextLen + len("…")
	if len(e.Title) > text || len(e.ProblemType) > text {
		t.Fatalf("title of %d bytes, type of %d bytes", len(e.Title), len(e.ProblemType))
	}
	if v := e.Validation; v != nil {
		if len(v.Title) > text || len(v.Fields) > maxFields {
			t.Fatalf("validation title of %d bytes, %d fields", len(v.Title), len(v.Fields))
		}
		for name, msgs := range v.Fields {
			if len(name) > text || len(msgs) > maxMessages {
				t.Fatalf("field name of %d bytes with %d messages", len(name), len(msgs))
			}
			for _, m := range msgs {
				if len(m) > text {
					t.Fatalf("field message of %d bytes", len(m))
				}
			}
		}
	}
	// The operation, the status, every field with its messages and a
	// snippet's quoted form.
	limit := 200 + maxFields*(maxMessages+1)*(text+4) + 4*snippetLen
	if msg := e.Error(); len(msg) > limit {
		t.Fatalf("message of %d bytes, want at most %d", len(msg), limit)
	}
}

// TestStatusErrorBoundsUpstreamText: a hostile upstream's 3 MB title, field
// names and messages come back cut to the bounds, never verbatim.
func TestStatusErrorBoundsUpstreamText(t *testing.T) {
	huge := strings.Repeat("é", 3<<19) // 3 MiB
	long := huge[:10000]
	fields := map[string][]string{}
	for i := range 50 {
		fields[fmt.Sprintf("%s%d", long, i)] = []string{long, long, long, long, long}
	}
	body, err := json.Marshal(map[string]any{"type": huge, "title": huge, "errors": fields})
	if err != nil {
		t.Fatal(err)
	}
	for _, status := range []int{400, 409, 429, 500} {
		resp := &http.Response{StatusCode: status, Status: huge, Header: http.Header{"Content-Type": {huge}}}
		e := statusError("create payment link", resp, body, time.Now())
		checkBounded(t, e)
		if !strings.HasSuffix(e.Title, "é…") {
			t.Errorf("status %d: title %.40q… not cut at a rune", status, e.Title)
		}
	}
	resp := &http.Response{StatusCode: 418, Status: "418 " + huge}
	checkBounded(t, statusError("get order x", resp, nil, time.Now()))
}
