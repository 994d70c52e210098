package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
)

// operators are plain tokens, each an operator's, named token-N as the
// configuration names them.
func operators(tokens ...string) []ordersync.AdminToken {
	out := make([]ordersync.AdminToken, len(tokens))
	for i, t := range tokens {
		out[i] = ordersync.AdminToken{Name: ordersync.DefaultTokenName(i), Role: ordersync.RoleOperator, Token: t}
	}
	return out
}

// roleTokens: "ops" an operator, "eve" a viewer.
var roleTokens = []ordersync.AdminToken{
	{Name: "ops", Role: ordersync.RoleOperator, Token: "ops-token"},
	{Name: "eve", Role: ordersync.RoleViewer, Token: "eve-token"},
}

// newRoleEnv is the API with every part it can have here, the two roles'
// tokens and the audit trail in the mirror's database.
func newRoleEnv(t *testing.T) *apiEnv {
	t.Helper()
	return newAPIEnvWith(t, func(e *apiEnv, c *admin.Config) {
		c.Tokens, c.Audit, c.Sessions = roleTokens, e.db, e.db
		c.Endpoints, c.DeliveryDeadLetters = e.db, e.db
	})
}

// concrete fills a route pattern's wildcards: "POST /v1/endpoints/{id}"
// is POST and /v1/endpoints/1.
func concrete(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") && seg != "{$}" {
			segs[i] = "1"
		}
	}
	return method, strings.TrimSuffix(strings.Join(segs, "/"), "{$}")
}

// actionRoutes are the routes under prefix that act, as the router lists
// them.
func actionRoutes(t *testing.T, api *admin.Server, prefix string) []string {
	t.Helper()
	var out []string
	for _, pattern := range api.Routes() {
		method, path := concrete(pattern)
		if strings.HasPrefix(path, prefix) && admin.AccessOf(method, pattern) == ordersync.AccessAct {
			out = append(out, pattern)
		}
	}
	return out
}

// apiDo sends one API request with a bearer token and decodes the answer.
func apiDo(t *testing.T, base, method, path, token, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// TestViewerCannotAct: on every API route that acts, as the router lists
// them, a viewer's token gets 403 with a problem body saying why, the
// action does not happen, and the refusal is in the audit trail under a
// name of its own; an operator's token is not refused for its role. A
// route added later is held to this without a line of this test.
func TestViewerCannotAct(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	ctx := context.Background()
	id, err := e.db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "m-role", Account: ordersync.DefaultAccount,
		Reason: ordersync.ReasonMalformed, Attempts: 1, LastError: "bad", Body: []byte(`{}`), CreatedAt: time.Now()})
	if err != nil || id != 1 {
		t.Fatalf("dead letter %d, %v; want id 1, the id concrete() fills in", id, err)
	}
	routes := actionRoutes(t, e.api, "/v1/")
	if len(routes) < 11 {
		t.Fatalf("only %d action routes found: %v", len(routes), routes)
	}
	for _, pattern := range routes {
		method, path := concrete(pattern)
		var p api.Problem
		if status := apiDo(t, e.url, method, path, "eve-token", `{}`, &p); status != http.StatusForbidden ||
			!strings.Contains(p.Title, "eve is a viewer") || !strings.Contains(p.Title, "only operators act") {
			t.Errorf("viewer %s: %d %+v, want 403 saying only operators act", pattern, status, p)
		}
	}
	if dl, err := e.db.FindDeadLetter(ctx, id); err != nil || dl.ReplayCount != 0 {
		t.Errorf("dead letter after the viewer's replays: %+v, %v; want never replayed", dl, err)
	}
	var trail api.AuditList
	if status := apiDo(t, e.url, "GET", "/v1/audit?actor=eve&limit=1000", "eve-token", "", &trail); status != 200 {
		t.Fatalf("a viewer reads the trail: %d", status)
	}
	actions := map[string]bool{}
	for _, r := range trail.Records {
		if r.Outcome != "403" || r.Role != "viewer" || r.Via != "api" {
			t.Errorf("viewer's refused action recorded as %+v", r)
		}
		if strings.Contains(r.Action, " ") {
			t.Errorf("route %s has no action name of its own (add it to admin's actions)", r.Action)
		}
		actions[r.Action] = true
	}
	if len(actions) != len(routes) {
		t.Errorf("%d distinct actions recorded for %d routes: %v", len(actions), len(routes), actions)
	}

	// The operator passes the role check on every route: whatever it
	// answers then is the route's own (400, 404, 501), never the role's.
	for _, pattern := range routes {
		method, path := concrete(pattern)
		var p api.Problem
		if status := apiDo(t, e.url, method, path, "ops-token", `{}`, &p); status == http.StatusForbidden || status == http.StatusUnauthorized {
			t.Errorf("operator %s: %d %+v", pattern, status, p)
		}
	}
	if dl, err := e.db.FindDeadLetter(ctx, id); err != nil || dl.ReplayCount == 0 {
		t.Errorf("dead letter after the operator's replay: %+v, %v; want replayed", dl, err)
	}
}

// TestAuditTrailAPI: an action leaves who, as which role, which way,
// what, on which object and how it ended; GET /v1/audit filters by actor
// and action and pages by cursor; bad parameters are named.
func TestAuditTrailAPI(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	ctx := context.Background()
	for i := range 3 {
		if _, err := e.db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: fmt.Sprint("m-", i), Account: ordersync.DefaultAccount,
			Reason: ordersync.ReasonMalformed, Attempts: 1, LastError: "bad", Body: []byte(`{}`), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/v1/dead-letters/1/replay", "/v1/dead-letters/3/replay", "/v1/dead-letters/99/replay"} {
		apiDo(t, e.url, "POST", path, "ops-token", "", nil)
	}
	apiDo(t, e.url, "POST", "/v1/orders/track", "ops-token", `{"orderCode":"nope"}`, nil)

	var all api.AuditList
	if status := apiDo(t, e.url, "GET", "/v1/audit", "eve-token", "", &all); status != 200 || all.Count != 4 {
		t.Fatalf("GET /v1/audit: %d %+v", status, all)
	}
	newest, replay := all.Records[0], all.Records[3]
	if newest.Action != "order.track" || newest.Object != "order nope" || newest.Outcome == "ok" {
		t.Errorf("the track of an unknown order recorded as %+v", newest)
	}
	if replay.Actor != "ops" || replay.Role != "operator" || replay.Via != "api" || replay.Action != "dead-letter.replay" ||
		replay.Object != "dead-letter 1" || replay.Outcome != "ok" || time.Since(replay.At) > time.Minute {
		t.Errorf("the first replay recorded as %+v", replay)
	}
	if all.Records[1].Object != "dead-letter 99" || all.Records[1].Outcome != "404" {
		t.Errorf("a replay of no letter recorded as %+v", all.Records[1])
	}
	if strings.Contains(fmt.Sprint(all), "ops-token") {
		t.Error("the trail holds a token")
	}

	// Pages of one replay each, following nextCursor to the end.
	var objects []string
	cursor := ""
	for range 5 {
		var page api.AuditList
		if status := apiDo(t, e.url, "GET", "/v1/audit?action=dead-letter.replay&actor=ops&limit=1&cursor="+cursor, "eve-token", "", &page); status != 200 {
			t.Fatalf("page: %d", status)
		}
		for _, r := range page.Records {
			objects = append(objects, r.Object)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if fmt.Sprint(objects) != "[dead-letter 99 dead-letter 3 dead-letter 1]" {
		t.Errorf("replays page by page: %v", objects)
	}
	for query, param := range map[string]string{"cursor=abc": "cursor", "since=yesterday": "since", "until=x": "until", "limit=-1": "limit"} {
		var p api.Problem
		if status := apiDo(t, e.url, "GET", "/v1/audit?"+query, "eve-token", "", &p); status != 400 || len(p.Errors[param]) == 0 {
			t.Errorf("?%s: %d %+v, want 400 naming %s", query, status, p, param)
		}
	}
	var none api.AuditList
	if apiDo(t, e.url, "GET", "/v1/audit?since=1h&until=2000-01-01", "eve-token", "", &none); none.Count != 0 || none.Records == nil {
		t.Errorf("an empty range: %+v, want an empty list", none)
	}
}

// TestLoopbackActsAsLoopback: without tokens every request is the
// operator "loopback", and the trail says so.
func TestLoopbackActsAsLoopback(t *testing.T) {
	t.Parallel()
	e := newAPIEnvWith(t, func(e *apiEnv, c *admin.Config) { c.Audit = e.db })
	if status := apiDo(t, e.url, "POST", "/v1/dead-letters/replay", "", "", nil); status != 200 {
		t.Fatalf("replay on loopback: %d", status)
	}
	var trail api.AuditList
	apiDo(t, e.url, "GET", "/v1/audit", "", "", &trail)
	if trail.Count != 1 || trail.Records[0].Actor != "loopback" || trail.Records[0].Role != "operator" || trail.Records[0].Action != "dead-letters.replay" {
		t.Errorf("trail %+v", trail)
	}
}
