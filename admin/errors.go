package admin

import (
	"log/slog"
	"net/http"

	"github.com/ordersync/ordersync/admin/api"
)

// fail answers the error of op by the API's table (api.WriteError),
// logging an error no row matches, which is a 500.
func (s *Server) fail(w http.ResponseWriter, op string, err error, notFound string) {
	if !api.WriteError(w, op, err, notFound) {
		s.quiet.Log(slog.LevelError, "api "+op, "admin API", "op", op, "err", err)
	}
}
