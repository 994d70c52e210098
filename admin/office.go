package admin

import (
	"net/http"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/console"
)

// office is what the API's handlers (admin/api) and the console's pages
// (admin/console) ask of the server: the request's audit note and record,
// who asks, the answer to an error, and for the console the tokens in
// force and the way back through the role check.
type office struct{ s *Server }

var _ console.Office = office{}

func (o office) Note(r *http.Request, object string) { noteObject(r, object) }

func (o office) Fail(w http.ResponseWriter, op string, err error, notFound string) {
	o.s.fail(w, op, err, notFound)
}

func (o office) Record(r *http.Request, action, object, outcome string) {
	o.s.recordAudit(r, action, object, outcome)
}

func (o office) Actor(r *http.Request) string {
	p, _ := PrincipalOf(r.Context())
	return p.Name
}

func (o office) Tokens() []ordersync.AdminToken { return o.s.tokens() }

func (o office) TokenOf(token string) (ordersync.AdminToken, bool) { return o.s.tokenOf(token) }

func (o office) Principal(r *http.Request) (ordersync.Principal, bool) {
	return PrincipalOf(r.Context())
}

func (o office) SetPrincipal(r *http.Request, p ordersync.Principal) {
	if rq := requestOf(r); rq != nil {
		rq.principal = p
	}
}

func (o office) ServeAs(w http.ResponseWriter, r *http.Request, p ordersync.Principal, via ordersync.Via) {
	o.s.serveAs(w, r, p, via)
}
