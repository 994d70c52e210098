package ordersync

import (
	"net/netip"
	"testing"
)

func TestProxies(t *testing.T) {
	p := Proxies{netip.MustParsePrefix("10.0.0.0/8")}
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
