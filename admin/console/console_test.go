package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatic serves each static file by name with its type, and nothing
// else: the templates are not files a browser may read.
func TestStatic(t *testing.T) {
	for _, tc := range []struct {
		path, status, typ string
	}{
		{"/console.css", "200", "text/css"},
		{"/overview.js", "200", "text/javascript"},
		{"/layout.html", "404", ""},
		{"/../templates/layout.html", "404", ""},
	} {
		rec := httptest.NewRecorder()
		Static().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got := http.StatusText(rec.Code); rec.Code != map[string]int{"200": 200, "404": 404}[tc.status] ||
			!strings.HasPrefix(rec.Header().Get("Content-Type"), tc.typ) {
			t.Errorf("GET %s: %d (%s) %s, want %s %s", tc.path, rec.Code, got, rec.Header().Get("Content-Type"), tc.status, tc.typ)
		}
	}
}

// TestTemplates: every page the admin package renders is among the
// templates, each with the layout it is drawn in.
func TestTemplates(t *testing.T) {
	for _, name := range []string{"layout.html", "signin.html", "home.html", "orders.html", "order.html", "totals.html",
		"audit.html", "deadletters.html", "deadletter.html", "endpoints.html", "failed.html", "export.html", "problem.html"} {
		if Templates.Lookup(name) == nil {
			t.Errorf("no template %s", name)
		}
	}
}
