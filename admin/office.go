package admin

import (
	"net/http"

	"github.com/ordersync/ordersync/admin/api"
)

// office is what the API's handlers (admin/api) ask of the server: the
// request's store, its audit note, and the answer to an error.
type office struct{ s *Server }

var _ api.Office = office{}

func (o office) Account(r *http.Request) string { return o.s.account(r) }

func (o office) ChooseStore(r *http.Request, all bool) (string, error) {
	c, err := o.s.chooseStore(r, all)
	return c.Account, err
}

func (o office) Note(r *http.Request, object string) { noteObject(r, object) }

func (o office) Fail(w http.ResponseWriter, op string, err error, notFound string) {
	o.s.fail(w, op, err, notFound)
}
