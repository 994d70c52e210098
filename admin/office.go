package admin

import (
	"net/http"

	"github.com/ordersync/ordersync/admin/api"
)

// office is what the API's handlers (admin/api) ask of the server: the
// request's audit note and record, who asks, and the answer to an
// error.
type office struct{ s *Server }

var _ api.Office = office{}

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
