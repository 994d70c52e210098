package admin

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/admin/console"
)

// guard refuses what a browser can be made to send to the admin API from
// another site: API writes in a form's or text/plain's shape (no CORS
// preflight), console writes in any shape but a form's (which then need
// their CSRF token), requests whose Origin is another site, and, without
// tokens, requests
// addressed to a name other than loopback's (DNS rebinding: a foreign name
// resolved to 127.0.0.1 makes the browser treat the API as that site's). It
// answers the refusal and returns false, or returns true.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if len(s.tokens()) == 0 && !loopbackHost(r.Host) {
		api.WriteProblem(w, http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback name: without admin_tokens the admin API answers only "+
			"requests addressed to localhost, 127.0.0.0/8 or [::1]", clip(r.Host)), nil)
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
		api.WriteProblem(w, http.StatusForbidden, fmt.Sprintf("cross-origin request refused: Origin %q is not this admin API (%s)",
			clip(origin), clip(r.Host)), nil)
		return false
	}
	if api.IsWrite(r.Method) && console.IsPath(r.URL.Path) {
		// The console's forms: a browser's form encoding, which only a page
		// of this origin can post with its CSRF token (serveConsole).
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/x-www-form-urlencoded" {
			api.WriteProblem(w, http.StatusUnsupportedMediaType, fmt.Sprintf("a console form is posted as application/x-www-form-urlencoded, got %q",
				clip(r.Header.Get("Content-Type"))), nil)
			return false
		}
		return true
	}
	if api.IsWrite(r.Method) && (r.ContentLength != 0 || r.Header.Get("Content-Type") != "") {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			api.WriteProblem(w, http.StatusUnsupportedMediaType, fmt.Sprintf("a %s with a body needs Content-Type: application/json, got %q",
				r.Method, clip(r.Header.Get("Content-Type"))), nil)
			return false
		}
	}
	return true
}

// loopbackHost reports whether a Host header names this machine's loopback:
// localhost, 127.0.0.0/8 or ::1, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// sameOrigin reports whether origin (scheme://host[:port]) names the
// address the request was sent to. The scheme may be http or https, since
// a TLS proxy may sit in front.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// clip bounds a client's header value quoted back in an answer.
func clip(s string) string { return ordersync.Clip(s, 100) }
