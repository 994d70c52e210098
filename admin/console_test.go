package admin_test

import (
	"context"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/console"
	"github.com/ordersync/ordersync/internal/proxy"
)

// TestConsoleSignIn: the sign-in page has a field labelled Token and a
// Content-Security-Policy without inline script; a valid token starts a
// session whose cookie is HttpOnly and SameSite=Strict (and Secure only
// when a trusted proxy says https); the session shows who is signed in,
// survives a restart, ends at sign-out (which needs its CSRF token) and
// when its token leaves the configuration.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	base := consoleServer(t, db, roleTokens, nil)
	b := newBrowser(t, base)

	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/sign-in" {
		t.Fatalf("the console without a session: %d to %q, want 303 to the sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, page = b.do("GET", "/console/sign-in", nil)
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'self'") ||
		!strings.Contains(csp, "style-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("sign-in page: %d, CSP %q", resp.StatusCode, csp)
	}
	if !strings.Contains(page, `<label for="token">Token</label>`) || !strings.Contains(page, `id="token" name="token"`) {
		t.Errorf("no field labelled Token:\n%s", page)
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "style=") {
		t.Error("the page has inline script or style")
	}
	if css, _ := b.do("GET", "/console/static/console.css", nil); css.StatusCode != 200 || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: %d %s", css.StatusCode, css.Header.Get("Content-Type"))
	}

	if resp := b.signIn("wrong"); resp.StatusCode != http.StatusUnauthorized || b.cookies["ordersync_session"] != nil {
		t.Fatalf("a wrong token: %d, session cookie %v", resp.StatusCode, b.cookies["ordersync_session"])
	}
	resp = b.signIn("eve-token")
	c := b.cookies["ordersync_session"]
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" || c == nil {
		t.Fatalf("sign-in: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.MaxAge != int(console.DefaultSessionTTL/time.Second) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path /, 12 h", c)
	}
	resp, page = b.do("GET", "/console/", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "<strong>eve</strong>, viewer") {
		t.Fatalf("signed in: %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, "eve-token") {
		t.Error("the page shows the token")
	}

	// The API keeps bearer tokens: a session cookie is not one.
	if status := apiDo(t, base, "GET", "/v1/orders", "", "", nil); status != http.StatusUnauthorized {
		t.Errorf("the API without a bearer: %d", status)
	}

	// A restart with the same configuration keeps the session.
	base2 := consoleServer(t, db, roleTokens, nil)
	b.base = base2
	if resp, _ := b.do("GET", "/console/", nil); resp.StatusCode != 200 {
		t.Errorf("after a restart: %d, want still signed in", resp.StatusCode)
	}

	// Sign-out needs the session's CSRF token.
	if resp, _ := b.do("POST", "/console/sign-out", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out without a CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := b.do("POST", "/console/sign-out", url.Values{"csrf": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out with a forged CSRF token: %d, want 403", resp.StatusCode)
	}
	kept := *b.cookies["ordersync_session"]
	resp, _ = b.do("POST", "/console/sign-out", url.Values{"csrf": {b.csrf(page)}})
	if resp.StatusCode != http.StatusSeeOther || b.cookies["ordersync_session"] != nil {
		t.Fatalf("sign-out: %d, cookie %v", resp.StatusCode, b.cookies["ordersync_session"])
	}
	b.cookies["ordersync_session"] = &kept // a copy kept: it signs in no more
	if resp, _ := b.do("GET", "/console/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the cookie after sign-out: %d, want 303 to sign in", resp.StatusCode)
	}

	// A session ends when its token leaves the configuration; the other
	// token's session lasts.
	ops := newBrowser(t, base2)
	ops.signIn("ops-token")
	eve := newBrowser(t, base2)
	eve.signIn("eve-token")
	base3 := consoleServer(t, db, roleTokens[:1], nil)
	ops.base, eve.base = base3, base3
	if resp, _ := eve.do("GET", "/console/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a removed token's session: %d, want 303 to sign in", resp.StatusCode)
	}
	if resp, page := ops.do("GET", "/console/", nil); resp.StatusCode != 200 || !strings.Contains(page, "ops</strong>, operator") {
		t.Errorf("the kept token's session: %d", resp.StatusCode)
	}
	// ...and when the token named so is replaced by another.
	replaced := []ordersync.AdminToken{{Name: "ops", Role: ordersync.RoleOperator, Token: "ops-token-2"}}
	ops.base = consoleServer(t, db, replaced, nil)
	if resp, _ := ops.do("GET", "/console/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a replaced token's session: %d, want 303 to sign in", resp.StatusCode)
	}

	// Sign-ins and sign-outs are in the trail, by name, never the token.
	page2, err := db.ListAudit(context.Background(), ordersync.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range page2.Records {
		seen = append(seen, r.Actor+" "+r.Action+" "+r.Outcome+" "+string(r.Via))
		if strings.Contains(r.Actor+r.Object, "token") {
			t.Errorf("a token in the trail: %+v", r)
		}
	}
	for _, want := range []string{"eve console.sign-in ok console", "anonymous console.sign-in 401 console", "eve console.sign-out ok console"} {
		if !strings.Contains(strings.Join(seen, "\n"), want) {
			t.Errorf("trail lacks %q:\n%s", want, strings.Join(seen, "\n"))
		}
	}
}

// TestConsoleSecureCookie: the session cookie is Secure when a trusted
// proxy says the request came over https, and only then.
func TestConsoleSecureCookie(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	for _, tc := range []struct {
		name    string
		proxies proxy.Trusted
		want    bool
	}{
		{"trusted proxy", proxy.Trusted{netip.MustParsePrefix("127.0.0.0/8")}, true},
		{"untrusted peer", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(t, consoleServer(t, db, roleTokens, func(c *admin.Config) { c.TrustedProxies = tc.proxies }))
			b.header.Set("X-Forwarded-Proto", "https")
			b.signIn("ops-token")
			c := b.cookies["ordersync_session"]
			if c == nil || c.Secure != tc.want {
				t.Errorf("session cookie %+v, want Secure %v", c, tc.want)
			}
		})
	}
}

// TestConsoleCSRFOnSignIn: the sign-in form is refused without the CSRF
// token its page set, so another site cannot sign a browser in.
func TestConsoleCSRFOnSignIn(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, consoleServer(t, openTestDB(t), roleTokens, nil))
	if resp, _ := b.do("POST", "/console/sign-in", url.Values{"token": {"ops-token"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in without a CSRF token: %d, want 403", resp.StatusCode)
	}
	b.do("GET", "/console/sign-in", nil) // sets the cookie
	if resp, _ := b.do("POST", "/console/sign-in", url.Values{"token": {"ops-token"}, "csrf": {"other"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in with a CSRF token not the cookie's: %d, want 403", resp.StatusCode)
	}
	if b.cookies["ordersync_session"] != nil {
		t.Error("a session began without the CSRF token")
	}
}

// TestConsoleSlowsDownWrongTokens: after a few wrong tokens from one
// client, the next attempt waits (429 with Retry-After), the right token
// included; once the wait has passed it signs in. Another client is not
// held up.
func TestConsoleSlowsDownWrongTokens(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	// Behind a proxy on loopback, so each browser is a client of its own.
	base := consoleServer(t, openTestDB(t), roleTokens, func(c *admin.Config) {
		c.Clock, c.TrustedProxies = clk.now, proxy.Trusted{netip.MustParsePrefix("127.0.0.0/8")}
	})
	b := newBrowser(t, base)
	b.header.Set("X-Forwarded-For", "198.51.100.1")
	for i := range 5 {
		if resp := b.signIn("guess"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	b.signIn("guess") // the sixth: from now on, a wait
	resp := b.signIn("ops-token")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || b.cookies["ordersync_session"] != nil {
		t.Fatalf("the right token during the wait: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	other := newBrowser(t, base)
	other.header.Set("X-Forwarded-For", "198.51.100.2")
	if resp := other.signIn("ops-token"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("another client meanwhile: %d, want 303", resp.StatusCode)
	}
	clk.add(time.Second)
	b.signIn("guess") // the seventh: a wait twice as long
	clk.add(time.Second)
	if resp := b.signIn("ops-token"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a second into a 2 s wait: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	clk.add(time.Second)
	if resp := b.signIn("ops-token"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the right token after the wait: %d, want 303", resp.StatusCode)
	}
}

// TestConsoleGuard: the admin API's guard holds for the console: foreign
// Origin, a non-form body, an oversized form, and without tokens a Host
// that is not loopback.
func TestConsoleGuard(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	withTokens := consoleServer(t, db, roleTokens, nil)
	if status, p := guardDo(t, withTokens, "POST", "/console/sign-in", "", "http://evil.example", "application/x-www-form-urlencoded", "token=x", ""); status != 403 || !strings.Contains(p.Title, "Origin") {
		t.Errorf("cross-origin sign-in: %d %+v", status, p)
	}
	if status, _ := guardDo(t, withTokens, "POST", "/console/sign-in", "", "", "application/json", `{"token":"x"}`, ""); status != 415 {
		t.Errorf("a JSON sign-in: %d, want 415", status)
	}
	if status, _ := guardDo(t, withTokens, "POST", "/console/sign-in", "", "", "text/plain", "token=x", ""); status != 415 {
		t.Errorf("a text/plain sign-in: %d, want 415", status)
	}
	// The console answers a browser with a page.
	if resp, page := newBrowser(t, withTokens).do("POST", "/console/sign-in", url.Values{"token": {strings.Repeat("x", 100<<10)}}); resp.StatusCode != 413 ||
		!strings.Contains(page, "a console form has at most") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("an oversized sign-in form: %d %s, want 413 as a page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	open := consoleServer(t, db, nil, nil)
	for _, path := range []string{"/", "/console/", "/console/sign-in", "/console/static/console.css"} {
		if status, p := guardDo(t, open, "GET", path, "rebind.evil.example", "", "", "", ""); status != 403 || !strings.Contains(p.Title, "loopback") {
			t.Errorf("GET %s by a rebound name: %d %+v", path, status, p)
		}
	}
	// Without tokens the console is loopback's, and its forms still need
	// the browser's CSRF token.
	b := newBrowser(t, open)
	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "loopback</strong>, operator") {
		t.Errorf("the console on loopback without tokens: %d\n%s", resp.StatusCode, page)
	}
	if resp, _ := b.do("POST", "/console/sign-out", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a form without its CSRF token on loopback: %d, want 403", resp.StatusCode)
	}
}

// TestConsolePagesNeedASession: with tokens configured, every console page
// and download but the sign-in page and the static files sends a request
// without a session to sign in, and reads nothing for it.
func TestConsolePagesNeedASession(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	base := consoleServer(t, db, roleTokens, nil)
	b := newBrowser(t, base)
	for _, path := range []string{"/console/", "/console/overview.json", "/console/audit", "/console/dead-letters",
		"/console/dead-letters/1", "/console/dead-letters/jobs/1", "/console/endpoints", "/console/orders",
		"/console/orders/ABC123", "/console/totals", "/console/totals.csv", "/console/export", "/console/export/download"} {
		resp, body := b.do("GET", path, nil)
		want := "/console/sign-in?" + url.Values{"next": {path}}.Encode() // back to the page once signed in
		if path == "/console/" || path == "/console/overview.json" {
			want = "/console/sign-in"
		}
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("GET %s without a session: %d to %q, want 303 to %s", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
		if strings.Contains(body, "ordersync_") || strings.Contains(body, "<table") {
			t.Errorf("GET %s without a session answered with content: %.200s", path, body)
		}
	}
}

// TestConsoleSignInReturns: a console page opened without a session
// sends the browser to sign in and, once signed in, back to itself, query
// and all, through a wrong token first; a next that leaves the console
// (another site, a scheme, "..", a backslash) signs in to the overview.
func TestConsoleSignInReturns(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	base := consoleServer(t, db, roleTokens, nil)
	const bookmark = "/console/orders?status=collected&sort=total_desc&q=a%2Fb"
	b := newBrowser(t, base)
	resp, _ := b.do("GET", bookmark, nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || loc != "/console/sign-in?next="+url.QueryEscape(bookmark) {
		t.Fatalf("the bookmark without a session: %d to %q", resp.StatusCode, loc)
	}
	_, page := b.do("GET", loc, nil)
	if !strings.Contains(page, `name="next" value="`+template.HTMLEscapeString(bookmark)+`"`) {
		t.Fatalf("the sign-in form does not carry the bookmark:\n%s", page)
	}
	signIn := func(b *browser, next, token string) *http.Response {
		_, page := b.do("GET", "/console/sign-in", nil)
		resp, _ := b.do("POST", "/console/sign-in", url.Values{"csrf": {b.csrf(page)}, "token": {token}, "next": {next}})
		return resp
	}
	if resp, page := b.do("POST", "/console/sign-in", url.Values{"csrf": {b.csrf(page)}, "token": {"wrong"}, "next": {bookmark}}); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(page, `name="next" value="`+template.HTMLEscapeString(bookmark)+`"`) {
		t.Errorf("a wrong token loses the bookmark: %d", resp.StatusCode)
	}
	if resp := signIn(b, bookmark, "eve-token"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != bookmark {
		t.Errorf("signed in: %d to %q, want %s", resp.StatusCode, resp.Header.Get("Location"), bookmark)
	}
	for _, hostile := range []string{"//evil.example/console/", "https://evil.example/console/", "/console/../v1/orders",
		"/console/%2e%2e/v1/orders", `/console/\evil.example`, "/\\evil.example/console/", "javascript:alert(1)",
		"/console/sign-out", "/console/orders\r\nLocation: https://evil.example/", "evil.example/console/"} {
		b := newBrowser(t, base)
		if resp := signIn(b, hostile, "eve-token"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
			t.Errorf("next %q: %d to %q, want the overview", hostile, resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, _ := b.do("GET", "/console/sign-in?next="+url.QueryEscape(hostile), nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("sign-in page with next %q: %d", hostile, resp.StatusCode)
		}
	}
	// The zone switch goes back by the same rule.
	b.do("GET", "/console/", nil)
	if resp, _ := b.do("GET", "/console/zone?zone=utc&back="+url.QueryEscape("/console/../v1/orders"), nil); resp.Header.Get("Location") != "/console/orders" {
		t.Errorf("zone switch back by ..: %q", resp.Header.Get("Location"))
	}
}
