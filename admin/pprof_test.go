package admin_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ordersync/ordersync/admin/api"
)

// TestPprofOperatorsOnly: the profiler answers an operator's token; a
// viewer's token gets 403, no token 401, and a listener without tokens
// (its loopback principal) 403; each request for a profile, given or
// refused, is in the audit trail.
func TestPprofOperatorsOnly(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	get := func(base, path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	paths := []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline", "/debug/pprof/symbol"}
	for _, path := range paths {
		if status, _ := get(e.url, path, ""); status != http.StatusUnauthorized {
			t.Errorf("anonymous %s: %d, want 401", path, status)
		}
		if status, body := get(e.url, path, "eve-token"); status != http.StatusForbidden || !strings.Contains(body, "operator token") {
			t.Errorf("viewer %s: %d %s, want 403 naming the operator token", path, status, body)
		}
		if status, body := get(e.url, path, "ops-token"); status != http.StatusOK || body == "" {
			t.Errorf("operator %s: %d, want 200 and the profile", path, status)
		}
	}
	if _, body := get(e.url, "/debug/pprof/heap?debug=1", "ops-token"); !strings.Contains(body, "heap profile") {
		t.Errorf("operator's heap profile reads %.100q", body)
	}
	if _, body := get(e.url, "/debug/pprof/goroutine?debug=1", "ops-token"); !strings.Contains(body, "goroutine profile") {
		t.Errorf("operator's goroutine profile reads %.100q", body)
	}

	var trail api.AuditList
	if status := apiDo(t, e.url, "GET", "/v1/audit?action=debug.pprof&limit=100", "ops-token", "", &trail); status != http.StatusOK {
		t.Fatalf("audit: %d", status)
	}
	outcomes := map[string]int{}
	for _, r := range trail.Records {
		outcomes[r.Actor+" "+r.Outcome]++
	}
	if outcomes["eve 403"] != len(paths) || outcomes["ops ok"] != len(paths)+2 {
		t.Errorf("audit of profile requests by actor and outcome: %v, want eve 403 x%d and ops ok x%d", outcomes, len(paths), len(paths)+2)
	}

	// Without tokens the listener is loopback-only and its callers are
	// anonymous: no profile.
	open := newAPIEnvWith(t, nil)
	if status, _ := get(open.url, "/debug/pprof/heap?debug=1", ""); status != http.StatusForbidden {
		t.Errorf("tokenless loopback: %d, want 403", status)
	}
}
