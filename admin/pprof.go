package admin

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// routePprof mounts Go's profiler (net/http/pprof) under /debug/pprof/ on
// the admin router, behind its tokens; importing the package also puts it
// on http.DefaultServeMux, which no listener of ordersync serves. A
// profile shows the process's memory, which holds credentials and buyers'
// data, and taking one costs CPU: only a principal holding an operator
// token gets one (not a viewer, and not the tokenless loopback principal),
// and every request for one, given or refused, is in the audit trail.
func (s *Server) routePprof() {
	s.mux.Handle("GET /debug/pprof/", s.operatorOnly(http.HandlerFunc(pprof.Index)))
	s.mux.Handle("GET /debug/pprof/cmdline", s.operatorOnly(http.HandlerFunc(pprof.Cmdline)))
	s.mux.Handle("GET /debug/pprof/profile", s.operatorOnly(http.HandlerFunc(pprof.Profile)))
	s.mux.Handle("GET /debug/pprof/symbol", s.operatorOnly(http.HandlerFunc(pprof.Symbol)))
	s.mux.Handle("GET /debug/pprof/trace", s.operatorOnly(http.HandlerFunc(pprof.Trace)))
}

// pprofAction names a profile request in the audit trail.
const pprofAction = "debug.pprof"

// operatorOnly serves h to a principal that came with an operator's token.
func (s *Server) operatorOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		profile := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
		if profile == "" {
			profile = "index"
		}
		p, _ := PrincipalOf(r.Context())
		if p == ordersync.Loopback || !s.hasToken(p) || !p.Role.May(ordersync.AccessAct) {
			title := fmt.Sprintf("%s may not profile the process: only a holder of an operator token (admin_tokens) may", p.Name)
			api.WriteProblem(w, http.StatusForbidden, title, nil)
			s.recordAudit(r, pprofAction, profile, ordersync.OutcomeOfStatus(http.StatusForbidden))
			return
		}
		s.recordAudit(r, pprofAction, profile, ordersync.OutcomeOK)
		h.ServeHTTP(w, r)
	})
}

// hasToken reports whether p is the principal of a configured token: the
// loopback principal of a listener without tokens is not.
func (s *Server) hasToken(p ordersync.Principal) bool {
	for _, t := range s.cfg.Tokens {
		if t.Name == p.Name && t.Role == p.Role {
			return true
		}
	}
	return false
}
