package webhook

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

// TestClientIP: X-Forwarded-For is believed only from trusted proxies, and
// only as far back as the chain stays trusted.
func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	tests := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"direct", "203.0.113.7:5555", nil, "203.0.113.7"},
		{"untrusted peer lies", "203.0.113.7:5555", []string{"198.51.100.1"}, "203.0.113.7"},
		{"trusted proxy", "10.1.2.3:443", []string{"198.51.100.1"}, "198.51.100.1"},
		{"chain of proxies", "127.0.0.1:443", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"spoofed head of chain", "10.1.2.3:443", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"several headers", "10.1.2.3:443", []string{"1.2.3.4", "198.51.100.1"}, "198.51.100.1"},
		{"garbage hop", "10.1.2.3:443", []string{"nonsense"}, "10.1.2.3"},
		{"trusted, no header", "10.1.2.3:443", nil, "10.1.2.3"},
		{"ipv6 mapped", "[::ffff:203.0.113.7]:80", nil, "203.0.113.7"},
	}
	rc := &Receiver{cfg: Config{TrustedProxies: trusted}}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", Path, nil)
		r.RemoteAddr = tc.remote
		for _, h := range tc.xff {
			r.Header.Add("X-Forwarded-For", h)
		}
		if got := rc.clientIP(r); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
