// Package proxy says who sent an HTTP request that may have come through
// trusted proxies (load balancers, TLS terminators): the client's address
// behind them and the request id they may pass on. The webhook receiver
// and the admin API ask it; internal/app builds the list from the
// configuration.
package proxy

import (
	"crypto/rand"
	"net/netip"
	"strings"
)

// Trusted lists the proxies (load balancers, TLS terminators) whose
// X-Forwarded-For and X-Forwarded-Proto are believed.
type Trusted []netip.Prefix

// Trusts reports whether the connection's peer, an address:port, is one of
// the proxies.
func (p Trusted) Trusts(remoteAddr string) bool {
	peer, err := netip.ParseAddrPort(remoteAddr)
	return err == nil && p.contains(peer.Addr().Unmap())
}

func (p Trusted) contains(a netip.Addr) bool {
	for _, prefix := range p {
		if prefix.Contains(a) {
			return true
		}
	}
	return false
}

// Client names who sent a request: the connection's peer, or, when that
// peer is a trusted proxy, the right-most address in X-Forwarded-For (its
// values, in order) that is not itself a trusted proxy.
func (p Trusted) Client(remoteAddr string, forwardedFor []string) string {
	peer, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	addr := peer.Addr().Unmap()
	if !p.contains(addr) {
		return addr.String()
	}
	hops := strings.Split(strings.Join(forwardedFor, ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if hop = hop.Unmap(); !p.contains(hop) {
			return hop.String()
		}
		addr = hop
	}
	return addr.String()
}

// maxRequestIDLen bounds an X-Request-Id taken from a proxy: ids are UUIDs
// or shorter, and a log line is no place for a long header.
const maxRequestIDLen = 128

// RequestID is the id of a request, for its log lines and its answer's
// X-Request-Id: the id the connection's peer sent (given, its
// X-Request-Id) when that peer is a trusted proxy and the id is made of
// letters, digits and -._:, else a new random one. A client that is not a
// proxy cannot choose the id its request is logged under.
func (p Trusted) RequestID(remoteAddr, given string) string {
	if given != "" && len(given) <= maxRequestIDLen && validRequestID(given) && p.Trusts(remoteAddr) {
		return given
	}
	return rand.Text()
}

func validRequestID(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == ':':
		default:
			return false
		}
	}
	return true
}
