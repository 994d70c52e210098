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

// when is h where the process has what h needs (on), and otherwise a 501
// naming the feature: the one guard for the parts a process's role may
// lack.
func when(on bool, feature string, h http.HandlerFunc) http.HandlerFunc {
	if on {
		return h
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		api.WriteProblem(w, http.StatusNotImplemented, feature+" is not enabled in this process", nil)
	}
}
