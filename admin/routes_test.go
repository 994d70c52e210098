package admin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ordersync/ordersync/admin"
)

// openRoutes answer without a session or a token, each for a reason.
var openRoutes = map[string]string{
	"GET /healthz":          "the liveness probe",
	"GET /readyz":           "the readiness probe",
	"GET /{$}":              "sends the browser to the console",
	"GET /console/sign-in":  "the sign-in page",
	"POST /console/sign-in": "signing in (its own CSRF token, TestConsoleCSRFOnSignIn)",
	"GET /console/static/":  "the console's stylesheet and script",
}

// TestEveryRouteIsCovered holds every route the router lists, a route
// added later included, to the admin listener's rules: the guard refuses
// another site's Origin; without a session or token only openRoutes
// answer (with 401, or a console page by sending to sign in); every
// console answer, refusal or page, carries the Content-Security-Policy;
// every console form needs its CSRF token. Roles are held per route by
// TestViewerCannotAct (API) and TestConsoleActionsRefused (console),
// which list the routes from the router too.
func TestEveryRouteIsCovered(t *testing.T) {
	t.Parallel()
	a := newActionsEnvWith(t, func(e *apiEnv, c *admin.Config) { c.Overview = e.db })
	routes := a.api.Routes()
	if len(routes) < 50 {
		t.Fatalf("only %d routes: %v", len(routes), routes)
	}
	for pattern := range openRoutes {
		if !strings.Contains(strings.Join(routes, "\n")+"\n", pattern+"\n") {
			t.Errorf("open route %s is not a route any more: take it out of openRoutes", pattern)
		}
	}
	ops, _ := signedIn(t, a.url, "ops-token")
	for _, pattern := range routes {
		method, path := concrete(pattern)
		if strings.HasSuffix(path, "/") && path != "/" && path != "/console/" {
			path += "x" // a path under a subtree route
		}
		console := strings.HasPrefix(path, "/console/") || path == "/"
		// A console write as a browser's form, an API write without a
		// body, so that only what the test is about refuses it.
		var form url.Values
		if console && method != http.MethodGet {
			form = url.Values{}
		}

		foreign := newBrowser(t, a.url)
		foreign.header.Set("Origin", "http://evil.example")
		if resp, body := foreign.do(method, path, form); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Origin") {
			t.Errorf("%s from another site: %d %.200s, want the guard's 403", pattern, resp.StatusCode, body)
		}

		resp, body := newBrowser(t, a.url).do(method, path, form)
		_, open := openRoutes[pattern]
		switch {
		case open:
		case console && resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(resp.Header.Get("Location"), "/console/sign-in"):
		case resp.StatusCode == http.StatusUnauthorized:
		default:
			t.Errorf("%s without a session or token: %d %s %.200s, want it refused", pattern, resp.StatusCode, resp.Header.Get("Location"), body)
		}
		if console && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src") {
			t.Errorf("%s's refusal has no Content-Security-Policy", pattern)
		}
		if !console {
			continue
		}
		if method == http.MethodPost && pattern != "POST /console/sign-in" {
			if resp, body := ops.do(method, path, url.Values{}); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF token is missing") ||
				!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src") {
				t.Errorf("%s without its CSRF token: %d %.200s, want a 403 page with the policy", pattern, resp.StatusCode, body)
			}
			continue
		}
		if method == http.MethodGet {
			resp, _ := ops.do(method, path, nil)
			if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src") {
				t.Errorf("%s signed in (%d) has no Content-Security-Policy", pattern, resp.StatusCode)
			}
		}
	}
}
