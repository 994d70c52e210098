package proxy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestProxies(t *testing.T) {
	p := Trusted{netip.MustParsePrefix("10.0.0.0/8")}
	for remote, want := range map[string]bool{"10.1.2.3:443": true, "[::ffff:10.1.2.3]:443": true, "203.0.113.7:80": false, "garbage": false} {
		if got := p.Trusts(remote); got != want {
			t.Errorf("Trusts(%s) = %v, want %v", remote, got, want)
		}
	}
	if got := p.Client("10.1.2.3:443", []string{"1.2.3.4, 198.51.100.1"}); got != "198.51.100.1" {
		t.Errorf("Client through a proxy = %s", got)
	}
	if got := p.Client("203.0.113.7:80", []string{"198.51.100.1"}); got != "203.0.113.7" {
		t.Errorf("Client from an untrusted peer = %s", got)
	}
}

// TestRequestID: a trusted proxy's X-Request-Id is kept; anyone else's, or
// one that would not be a clean log value, is replaced by a fresh id.
func TestRequestID(t *testing.T) {
	p := Trusted{netip.MustParsePrefix("10.0.0.0/8")}
	const uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if got := p.RequestID("10.1.2.3:443", uuid); got != uuid {
		t.Errorf("from a trusted proxy: %q, want its %q", got, uuid)
	}
	for _, tc := range []struct{ remote, given string }{
		{"203.0.113.7:80", uuid},                   // not a proxy
		{"10.1.2.3:443", ""},                       // none sent
		{"10.1.2.3:443", "a b"},                    // a space
		{"10.1.2.3:443", "x\"\n{"},                 // would break a log line
		{"10.1.2.3:443", strings.Repeat("a", 129)}, // too long
	} {
		got := p.RequestID(tc.remote, tc.given)
		if got == tc.given || got == "" || !validRequestID(got) {
			t.Errorf("RequestID(%q, %q) = %q, want a fresh id", tc.remote, tc.given, got)
		}
	}
	if a, b := p.RequestID("203.0.113.7:80", ""), p.RequestID("203.0.113.7:80", ""); a == b {
		t.Errorf("two fresh ids are the same: %q", a)
	}
}
