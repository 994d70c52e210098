// Package retryafter reads the Retry-After header of an HTTP answer, for
// the clients that honour it: the payment link service's client and the
// dispatcher of HTTP deliveries.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse parses a Retry-After value, delay seconds or an
// HTTP-date, into a delay from now between 0 and limit. ok is false when v
// is empty or neither form.
func Parse(v string, now time.Time, limit time.Duration) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs > uint64(limit/time.Second) {
			return limit, true
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	} else {
		return 0, false
	}
	return min(max(d, 0), limit), true
}
