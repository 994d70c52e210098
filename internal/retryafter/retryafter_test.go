package retryafter

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	limit := time.Minute
	for _, tc := range []struct {
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"soon", 0, false},
		{"-5", 0, false},
		{" 7 ", 7 * time.Second, true},
		{"3600", limit, true},              // capped at the limit
		{"99999999999999999999", 0, false}, // not a number ParseUint takes
		{"Fri, 02 Jan 2026 03:04:35 GMT", 30 * time.Second, true},
		{"Fri, 02 Jan 2026 03:00:00 GMT", 0, true},     // in the past: no wait
		{"Sat, 03 Jan 2026 03:04:05 GMT", limit, true}, // a day away: capped
	} {
		got, ok := Parse(tc.v, now, limit)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.wantOK)
		}
	}
}
