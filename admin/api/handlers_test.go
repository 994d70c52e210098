package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/fake"
)

// testOffice remembers what it was asked.
type testOffice struct {
	notes   []string
	records []string
}

func (o *testOffice) Note(_ *http.Request, object string) { o.notes = append(o.notes, object) }

func (o *testOffice) Record(_ *http.Request, action, object, outcome string) {
	o.records = append(o.records, action+" "+object+": "+outcome)
}

func (o *testOffice) Actor(*http.Request) string { return "tester" }

func (o *testOffice) Fail(w http.ResponseWriter, op string, err error, notFound string) {
	WriteError(w, op, err, notFound)
}

func serve(t *testing.T, deps Deps, method, target string) (*httptest.ResponseRecorder, Problem) {
	t.Helper()
	mux := http.NewServeMux()
	deps.Stores = Stores{Default: "acme"}
	New(deps, &testOffice{}).Routes(mux)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	var p Problem
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatalf("%s %s: %d, not a problem: %s", method, target, w.Code, w.Body)
		}
	}
	return w, p
}

// TestHandlersAnswer: the orders' handlers answer through the office and
// the table: a listing, a bad query naming its parameter, an order not in
// the mirror, and the 501 of a process without a follower.
func TestHandlersAnswer(t *testing.T) {
	deps := Deps{Orders: fake.NewStore()}
	if w, _ := serve(t, deps, "GET", "/v1/orders"); w.Code != http.StatusOK {
		t.Errorf("list: %d %s", w.Code, w.Body)
	}
	if w, p := serve(t, deps, "GET", "/v1/orders?minTotal=ten"); w.Code != http.StatusBadRequest || len(p.Errors["minTotal"]) != 1 {
		t.Errorf("a bad query: %d %+v, want 400 naming minTotal", w.Code, p)
	}
	if w, p := serve(t, deps, "GET", "/v1/orders/nope42"); w.Code != http.StatusNotFound || p.Title != "order nope42 is not in the mirror" {
		t.Errorf("an unknown order: %d %q", w.Code, p.Title)
	}
	if w, p := serve(t, deps, "GET", "/v1/orders?account=ghost"); w.Code != http.StatusBadRequest || len(p.Errors["account"]) != 1 {
		t.Errorf("a store not served: %d %+v, want 400 naming account", w.Code, p)
	}
	if w, p := serve(t, deps, "POST", "/v1/orders/track"); w.Code != http.StatusNotImplemented || p.Title != "tracking is not enabled in this process" {
		t.Errorf("no follower: %d %q", w.Code, p.Title)
	}
	if w, _ := serve(t, deps, "GET", "/v1/events?orderCode=X"); w.Code != http.StatusOK {
		t.Errorf("events: %d %s", w.Code, w.Body)
	}
	if w, p := serve(t, deps, "GET", "/v1/events?limit=-1"); w.Code != http.StatusBadRequest || len(p.Errors["limit"]) != 1 {
		t.Errorf("events, a bad limit: %d %+v", w.Code, p)
	}
}

// TestDeadLetterHandlersAnswer: a bad id or filter is a 400 naming it, a
// letter not kept a 404 naming it, and replay without a replayer a 501.
func TestDeadLetterHandlersAnswer(t *testing.T) {
	db := fake.NewStore()
	deps := Deps{Orders: db, DeadLetters: db}
	if w, _ := serve(t, deps, "GET", "/v1/dead-letters"); w.Code != http.StatusOK {
		t.Errorf("list: %d %s", w.Code, w.Body)
	}
	if w, p := serve(t, deps, "GET", "/v1/dead-letters/abc"); w.Code != http.StatusBadRequest || len(p.Errors["id"]) != 1 {
		t.Errorf("a bad id: %d %+v", w.Code, p)
	}
	if w, p := serve(t, deps, "GET", "/v1/dead-letters?reason=bogus&limit=x"); w.Code != http.StatusBadRequest || len(p.Errors["reason"]) != 1 || len(p.Errors["limit"]) != 1 {
		t.Errorf("a bad filter: %d %+v", w.Code, p)
	}
	if w, p := serve(t, deps, "GET", "/v1/dead-letters/7"); w.Code != http.StatusNotFound || p.Title != "no dead letter 7" {
		t.Errorf("a letter not kept: %d %q", w.Code, p.Title)
	}
	if w, p := serve(t, deps, "POST", "/v1/dead-letters/7/replay"); w.Code != http.StatusNotImplemented || p.Title != "replay is not enabled in this process" {
		t.Errorf("no replayer: %d %q", w.Code, p.Title)
	}
}

// TestAuditHandlerAnswers: the trail pages, and a bad since or cursor is
// a 400 naming it.
func TestAuditHandlerAnswers(t *testing.T) {
	db := fake.NewStore()
	deps := Deps{Orders: db, Audit: db, Clock: time.Now}
	if w, _ := serve(t, deps, "GET", "/v1/audit?since=24h&limit=5"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"records":[]`) {
		t.Errorf("list: %d %s", w.Code, w.Body)
	}
	for _, param := range []string{"since=yesterday", "until=soon", "cursor=0", "limit=-1"} {
		name, _, _ := strings.Cut(param, "=")
		if w, p := serve(t, deps, "GET", "/v1/audit?"+param); w.Code != http.StatusBadRequest || len(p.Errors[name]) != 1 {
			t.Errorf("%s: %d %+v, want 400 naming %s", param, w.Code, p, name)
		}
	}
	if w, _ := serve(t, Deps{Orders: db}, "GET", "/v1/audit"); w.Code != http.StatusNotImplemented {
		t.Errorf("no audit log: %d", w.Code)
	}
}
