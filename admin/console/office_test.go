package console

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/fake"
)

// testOffice routes the console straight to its pages, with one operator
// token, and remembers who each request was served as.
type testOffice struct {
	mux       *http.ServeMux
	principal map[*http.Request]ordersync.Principal
	served    []string
}

var operator = ordersync.AdminToken{Name: "ops", Token: strings.Repeat("o", 32), Role: ordersync.RoleOperator}

func (o *testOffice) Note(*http.Request, string)                   {}
func (o *testOffice) Record(*http.Request, string, string, string) {}
func (o *testOffice) Actor(*http.Request) string                   { return "" }
func (o *testOffice) Fail(w http.ResponseWriter, op string, err error, notFound string) {
	api.WriteError(w, op, err, notFound)
}
func (o *testOffice) Tokens() []ordersync.AdminToken { return []ordersync.AdminToken{operator} }
func (o *testOffice) TokenOf(token string) (ordersync.AdminToken, bool) {
	return operator, token == operator.Token
}
func (o *testOffice) Principal(r *http.Request) (ordersync.Principal, bool) {
	p, ok := o.principal[r]
	return p, ok
}
func (o *testOffice) SetPrincipal(r *http.Request, p ordersync.Principal) { o.principal[r] = p }
func (o *testOffice) ServeAs(w http.ResponseWriter, r *http.Request, p ordersync.Principal, via ordersync.Via) {
	o.principal[r] = p
	o.served = append(o.served, p.Name+" "+string(via))
	o.mux.ServeHTTP(w, r)
}

// TestServeThroughTheOffice: the console sets its headers on every answer,
// sends a page asked for without a session to the sign-in page, refuses a
// form without one, and serves what needs no session through the office
// as anonymous; a sign-in with the right token and CSRF token starts a
// session the next request is served by, as the token's principal.
func TestServeThroughTheOffice(t *testing.T) {
	db := fake.NewStore()
	office := &testOffice{mux: http.NewServeMux(), principal: map[*http.Request]ordersync.Principal{}}
	c := New(Config{Stores: api.Stores{Default: "acme"}, Orders: db, Sessions: db, Clock: time.Now,
		Logger: slog.New(slog.DiscardHandler)}, office)
	t.Cleanup(c.Close)
	c.Routes(office.mux)
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		c.Serve(w, r)
		if w.Header().Get("Content-Security-Policy") != contentSecurityPolicy {
			t.Errorf("%s %s: no CSP", r.Method, r.URL)
		}
		return w
	}
	if w := serve(httptest.NewRequest("GET", "/console/orders", nil)); w.Code != http.StatusSeeOther ||
		w.Header().Get("Location") != "/console/sign-in?next=%2Fconsole%2Forders" {
		t.Errorf("a page without a session: %d %v", w.Code, w.Header())
	}
	if w := serve(httptest.NewRequest("POST", "/console/sign-out", nil)); w.Code != http.StatusUnauthorized ||
		!strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Errorf("a form without a session: %d %v", w.Code, w.Header())
	}
	w := serve(httptest.NewRequest("GET", "/console/sign-in", nil))
	csrf := csrfInputOf(w.Body.String())
	if w.Code != http.StatusOK || csrf == "" || len(office.served) != 1 || office.served[0] != "anonymous console" {
		t.Fatalf("the sign-in page: %d, csrf %q, served as %q", w.Code, csrf, office.served)
	}
	form := url.Values{"token": {operator.Token}, "csrf": {csrf}}
	r := httptest.NewRequest("POST", "/console/sign-in", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(w.Result().Cookies()[0])
	w = serve(r)
	var session *http.Cookie
	for _, ck := range w.Result().Cookies() {
		if ck.Name == sessionCookie {
			session = ck
		}
	}
	if w.Code != http.StatusSeeOther || session == nil {
		t.Fatalf("sign in: %d %v", w.Code, w.Header())
	}
	r = httptest.NewRequest("GET", "/console/sign-in", nil)
	r.AddCookie(session)
	if p, _, err := c.consolePrincipal(r.WithContext(context.Background())); err != nil || p.Name != "ops" || p.Role != ordersync.RoleOperator {
		t.Errorf("the session's principal: %+v %v", p, err)
	}
}

// csrfInputOf is the CSRF token of a page's form.
func csrfInputOf(page string) string {
	_, rest, ok := strings.Cut(page, `name="csrf" value="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
