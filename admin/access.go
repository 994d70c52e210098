package admin

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/admin/console"
	"github.com/ordersync/ordersync/internal/httpstatus"
)

// router is the admin listener's ServeMux, which also remembers every
// pattern it was given, so the tests can hold every action route to the
// role and audit rules, a route added later included.
type router struct {
	*http.ServeMux
	patterns []string
}

func newRouter() *router { return &router{ServeMux: http.NewServeMux()} }

// HandleFunc registers h for pattern, as http.ServeMux does.
func (rt *router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	rt.patterns = append(rt.patterns, pattern)
	rt.ServeMux.HandleFunc(pattern, h)
}

// Handle registers h for pattern, as http.ServeMux does.
func (rt *router) Handle(pattern string, h http.Handler) {
	rt.patterns = append(rt.patterns, pattern)
	rt.ServeMux.Handle(pattern, h)
}

// Routes lists the patterns the server answers, in the order registered.
func (s *Server) Routes() []string { return append([]string(nil), s.mux.patterns...) }

// actions names each action route in the audit trail, and says which path
// wildcard names its object. A route that acts and is not here is recorded
// by its pattern (and a test fails).
var actions = map[string]struct {
	name, object string
	// self: the handler records the action itself (signing in, which
	// records only what it checked: no refusal the limiter or the CSRF
	// check answered, so guessing fills no table).
	self bool
}{
	"POST /v1/orders/track":                            {"order.track", "", false},
	"POST /v1/payment-links":                           {"payment-link.create", "", false},
	"POST /v1/dead-letters/{id}/replay":                {"dead-letter.replay", "dead-letter", false},
	"POST /v1/dead-letters/replay":                     {"dead-letters.replay", "", false},
	"POST /v1/endpoints":                               {"endpoint.create", "", false},
	"PATCH /v1/endpoints/{id}":                         {"endpoint.update", "endpoint", false},
	"DELETE /v1/endpoints/{id}":                        {"endpoint.delete", "endpoint", false},
	"POST /v1/endpoints/{id}/rotate-secret":            {"endpoint.rotate-secret", "endpoint", false},
	"POST /v1/endpoints/{id}/test":                     {"endpoint.test", "endpoint", false},
	"POST /v1/endpoints/{id}/replay":                   {"endpoint.replay", "endpoint", false},
	"POST /v1/delivery-dead-letters/{id}/replay":       {"delivery-dead-letter.replay", "delivery-dead-letter", false},
	"POST /console/sign-in":                            {"console.sign-in", "", true},
	"POST /console/sign-out":                           {"console.sign-out", "", false},
	"POST /console/orders/{id}/resync":                 {"order.track", "order", false},
	"POST /console/dead-letters/{id}/replay":           {"dead-letter.replay", "dead-letter", false},
	"POST /console/dead-letters/replay":                {"dead-letters.replay", "", false},
	"POST /console/dead-letters/{id}/track":            {"dead-letter.track-order", "dead-letter", false},
	"POST /console/endpoints/{id}/enable":              {"endpoint.enable", "endpoint", false},
	"POST /console/endpoints/{id}/disable":             {"endpoint.disable", "endpoint", false},
	"POST /console/endpoints/{id}/rotate-secret":       {"endpoint.rotate-secret", "endpoint", false},
	"POST /console/endpoints/{id}/test":                {"endpoint.test", "endpoint", false},
	"POST /console/endpoints/{id}/replay":              {"endpoint.replay", "endpoint", false},
	"POST /console/endpoints/{id}/failed/replay":       {"endpoint.replay-failed", "endpoint", false},
	"POST /v1/endpoints/{id}/failed-deliveries/replay": {"endpoint.replay-failed", "endpoint", false},
}

// actionNames are the names of the actions the trail records, sorted.
func actionNames() []string {
	var names []string
	for _, a := range actions {
		if !slices.Contains(names, a.name) {
			names = append(names, a.name)
		}
	}
	slices.Sort(names)
	return names
}

// sessionRoutes act on the caller's own session, not on the service: a
// viewer may sign in and out.
var sessionRoutes = map[string]bool{"POST /console/sign-in": true, "POST /console/sign-out": true}

// AccessOf is what a request to the route pattern does: every write
// method acts, but signing in and out; anything else reads.
func AccessOf(method, pattern string) ordersync.Access {
	if api.IsWrite(method) && !sessionRoutes[pattern] {
		return ordersync.AccessAct
	}
	return ordersync.AccessRead
}

// bearer is the token a request's bearer names, compared with every
// configured one in constant time, or false.
func (s *Server) bearer(r *http.Request) (ordersync.AdminToken, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return ordersync.AdminToken{}, false
	}
	return s.tokenOf(token)
}

// tokenOf finds the configured token equal to token, looking at every one
// so the time taken does not say which matched.
func (s *Server) tokenOf(token string) (ordersync.AdminToken, bool) {
	var found ordersync.AdminToken
	match := 0
	for _, t := range s.tokens() {
		if subtle.ConstantTimeCompare([]byte(token), []byte(t.Token)) == 1 {
			found, match = t, 1
		}
	}
	return found, match == 1
}

// request is what the admin listener knows of a request beyond it: who
// asks and which way, and the audit record its action will leave, which a
// handler may make more precise (the object a body named).
type request struct {
	principal ordersync.Principal
	via       ordersync.Via
	object    string
}

type requestKey struct{}

func requestOf(r *http.Request) *request {
	rq, _ := r.Context().Value(requestKey{}).(*request)
	return rq
}

// PrincipalOf is who r acts as, once the server has resolved it.
func PrincipalOf(ctx context.Context) (ordersync.Principal, bool) {
	rq, ok := ctx.Value(requestKey{}).(*request)
	if !ok {
		return ordersync.Principal{}, false
	}
	return rq.principal, true
}

// noteObject names the object of r's action when its path does not (a
// body's order code, a created endpoint's id).
func noteObject(r *http.Request, object string) {
	if rq := requestOf(r); rq != nil {
		rq.object = object
	}
}

// serveAs serves r as principal p come by via: the role decides whether
// it may act at all, and an action, allowed or not, leaves an audit
// record with how it ended.
func (s *Server) serveAs(w http.ResponseWriter, r *http.Request, p ordersync.Principal, via ordersync.Via) {
	rq := &request{principal: p, via: via}
	r = r.WithContext(context.WithValue(r.Context(), requestKey{}, rq))
	_, pattern := s.mux.Handler(r)
	if !api.IsWrite(r.Method) {
		s.mux.ServeHTTP(w, r)
		return
	}
	act, known := actions[pattern]
	if !known {
		act.name = pattern
	}
	if act.object != "" {
		rq.object = act.object + " " + pathValue(pattern, r.URL.Path, "id")
	}
	sw := &httpstatus.Writer{ResponseWriter: w}
	if AccessOf(r.Method, pattern) == ordersync.AccessAct && !p.Role.May(ordersync.AccessAct) {
		api.WriteProblem(sw, http.StatusForbidden, fmt.Sprintf("%s is a viewer: viewers read, only operators act. Nothing was done (%s: %s).",
			p.Name, console.ActionInWords(act.name), act.name), nil)
	} else {
		s.mux.ServeHTTP(sw, r)
	}
	if pattern == "" || act.self { // no such route: nothing was done to record
		return
	}
	s.recordAudit(r, act.name, rq.object, ordersync.OutcomeOfStatus(sw.Status()))
}

// recordAudit records an action of r in the audit trail: its principal and
// way in, the action, its object and outcome. Handlers of reads that the
// trail must show (exports of buyers' data) call it themselves. A trail
// that cannot be written is logged, never the answer's failure: the
// action has happened.
func (s *Server) recordAudit(r *http.Request, action, object, outcome string) {
	if s.cfg.Audit == nil {
		return
	}
	rq := requestOf(r)
	if rq == nil {
		rq = &request{principal: ordersync.Principal{Name: "unknown"}, via: ordersync.ViaAPI}
	}
	rec := ordersync.AuditRecord{At: s.cfg.Clock(), Actor: rq.principal.Name, Role: rq.principal.Role, Via: rq.via,
		Action: action, Object: object, Outcome: outcome}
	// The request's own context may end with the answer.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	if err := s.cfg.Audit.RecordAudit(ctx, rec); err != nil {
		s.auditFailures.Inc()
		s.quiet.Log(slog.LevelError, "record audit", "admin: record audit", "action", action, "actor", rec.Actor, "err", err)
	}
}

// auditTimeout bounds writing one audit record after the request's own
// context may have ended.
const auditTimeout = 5 * time.Second

// pathValue is the segment of path at the wildcard {name} of pattern.
func pathValue(pattern, path, name string) string {
	_, pat, _ := strings.Cut(pattern, " ")
	ps, us := strings.Split(pat, "/"), strings.Split(path, "/")
	for i, seg := range ps {
		if seg == "{"+name+"}" && i < len(us) {
			return us[i]
		}
	}
	return ""
}
