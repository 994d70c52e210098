package dispatch

import (
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		code       int
		retryAfter string
		verdict    verdict
		label      string
		wait       time.Duration
	}{
		{200, "", delivered, "2xx", 0},
		{204, "5", delivered, "2xx", 0},
		{299, "", delivered, "2xx", 0},
		{301, "", permanent, "3xx", 0},
		{304, "", permanent, "3xx", 0},
		{400, "", permanent, "4xx", 0},
		{404, "", permanent, "4xx", 0},
		{410, "", gone, "410", 0},
		{422, "3", permanent, "4xx", 0},
		{429, "", transient, "429", 0},
		{429, "3", transient, "429", 3 * time.Second},
		{429, "7200", transient, "429", time.Hour}, // capped
		{429, "Sun, 01 Mar 2026 09:00:30 GMT", transient, "429", 30 * time.Second},
		{429, "soon", transient, "429", 0},
		{500, "3", transient, "5xx", 0}, // Retry-After counts on 429 and 503 only
		{502, "", transient, "5xx", 0},
		{503, "40", transient, "5xx", 40 * time.Second},
		{599, "", transient, "5xx", 0},
		{100, "", permanent, "3xx", 0},
	} {
		v, label, wait := classify(c.code, c.retryAfter, now, time.Hour)
		if v != c.verdict || label != c.label || wait != c.wait {
			t.Errorf("classify(%d, %q) = %v %s %v; want %v %s %v", c.code, c.retryAfter, v, label, wait, c.verdict, c.label, c.wait)
		}
	}
}
