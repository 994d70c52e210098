package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
)

// failedEnv is the actions' console with an endpoint that has failed
// deliveries (delivery dead letters of orders F0…F4, as the dispatcher
// leaves them) beside delivered ones (D0…D2), and a receiver that refuses
// F3 and F4.
func failedEnv(t *testing.T) (*actionsEnv, map[string]int64) {
	t.Helper()
	return failedEnvWith(t, nil, nil)
}

// failedEnvWith is failedEnv with the API's configuration edited by
// configure and the orders F0…F4 and D0…D2 named by codes (the name
// itself when codes has none). Each failed delivery is in the delivery
// log too, as the dispatcher leaves it, so its order's timeline shows it.
// ids are by F0…F4.
func failedEnvWith(t *testing.T, configure func(e *apiEnv, c *admin.Config), codes map[string]string) (*actionsEnv, map[string]int64) {
	t.Helper()
	a := newActionsEnvWith(t, configure)
	ctx := context.Background()
	code := func(name string) string {
		if c, ok := codes[name]; ok {
			return c
		}
		return name
	}
	ids := map[string]int64{}
	var recs []ordersync.DeliveryRecord
	for i := range 5 {
		name := fmt.Sprint("F", i)
		id, err := a.db.AddDeliveryDeadLetter(ctx, ordersync.DeliveryDeadLetter{EndpointID: a.endpoint.ID, Event: ordersync.HookOrderPaid,
			WebhookID: "msg_" + name, Account: ordersync.DefaultAccount, OrderCode: code(name), Attempts: 83, LastStatus: 503,
			LastBody: "busy", Body: []byte(`{"type":"order.paid","data":{"orderCode":"` + code(name) + `"}}`), CreatedAt: time.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
		recs = append(recs, ordersync.DeliveryRecord{WebhookID: "msg_" + name, EndpointID: a.endpoint.ID, Event: ordersync.HookOrderPaid,
			Account: ordersync.DefaultAccount, OrderCode: code(name), Outcome: ordersync.DeliveryDeadLettered, Attempts: 83, Status: 503,
			Detail: "busy", At: time.Now().Add(-time.Hour)})
	}
	for i := range 3 {
		recs = append(recs, ordersync.DeliveryRecord{WebhookID: fmt.Sprint("msg_D", i), EndpointID: a.endpoint.ID, Event: ordersync.HookOrderPaid,
			Account: ordersync.DefaultAccount, OrderCode: code(fmt.Sprint("D", i)), Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: 200})
	}
	if err := a.db.RecordDeliveries(ctx, recs); err != nil {
		t.Fatal(err)
	}
	a.refuse[code("F3")], a.refuse[code("F4")] = true, true
	return a, ids
}

// receivedByOrder is what the receiver got per order code.
func (a *actionsEnv) receivedByOrder(t *testing.T) map[string]int {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.perOrder {
		out[k] = v
	}
	return out
}

// overviewFailed is the overview's count of the endpoint's failed
// deliveries.
func (a *actionsEnv) overviewFailed(t *testing.T) int {
	t.Helper()
	ov, err := a.db.Overview(context.Background(), ordersync.OverviewParams{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ov.Endpoints {
		if e.ID == a.endpoint.ID {
			return e.DeadLetters
		}
	}
	t.Fatalf("the overview has no endpoint %s", a.endpoint.ID)
	return 0
}

var failedCount = regexp.MustCompile(`id="failed-count">(\d+) failed`)

// TestConsoleFailedDeliveries: the endpoint page links its failed
// deliveries, counted as the overview counts them; the list shows each
// one's order (linked), event, attempts and last answer; an operator
// replays one, then (after a confirmation page with the count) every
// one: each redirect lands on the list saying what was done and marking
// those that failed again, a reload repeats nothing, nothing delivered is
// sent, and the endpoint page and the overview agree all along. A viewer
// sees no action and is refused with a page.
func TestConsoleFailedDeliveries(t *testing.T) {
	t.Parallel()
	a, ids := failedEnv(t)
	ep := a.endpoint.ID
	list := "/console/endpoints/" + ep + "/failed"

	viewer, viewerCSRF := signedIn(t, a.url, "eve-token")
	if _, page := viewer.do("GET", "/console/endpoints", nil); !strings.Contains(page, `href="`+list+`" id="failed-`+ep+`">5 failed</a>`) {
		t.Errorf("the endpoints page does not link 5 failed deliveries:\n%s", page)
	}
	resp, page := viewer.do("GET", list, nil)
	if m := failedCount.FindStringSubmatch(page); resp.StatusCode != 200 || m == nil || m[1] != "5" {
		t.Fatalf("failed list: %d, want 5 failed:\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{`<a href="/console/orders/F3">F3</a>`, "order.paid", ">83<", "HTTP 503: busy"} {
		if !strings.Contains(page, want) {
			t.Errorf("the list lacks %q:\n%s", want, page)
		}
	}
	// The order's link or cell, not its code alone: the page's random CSRF
	// token may hold "D0".
	if strings.Contains(page, `/console/orders/D0"`) || strings.Contains(page, ">D0<") || strings.Contains(page, `method="post" action="`+list) {
		t.Errorf("a viewer's list shows a delivered order or an action form:\n%s", page)
	}
	resp, page = viewer.do("POST", list+"/replay", url.Values{"csrf": {viewerCSRF}, "letter": {fmt.Sprint(ids["F0"])}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `id="problem"`) || !strings.Contains(page, "only operators act") {
		t.Errorf("a viewer's replay: %d %s, want a 403 page:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}

	ops, csrf := signedIn(t, a.url, "ops-token")
	if resp, body := ops.do("POST", list+"/replay", url.Values{"letter": {fmt.Sprint(ids["F0"])}}); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(body, "CSRF") {
		t.Errorf("a replay without its CSRF token: %d %s", resp.StatusCode, body)
	}
	if got := a.receivedByOrder(t); len(got) != 0 {
		t.Fatalf("refused requests sent %v", got)
	}

	// One.
	one := url.Values{"csrf": {csrf}, "letter": {fmt.Sprint(ids["F0"])}}
	resp, _ = ops.do("POST", list+"/replay", one)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, list+"?") {
		t.Fatalf("replay one: %d to %q, want a redirect to the list", resp.StatusCode, loc)
	}
	_, page = ops.do("GET", loc, nil)
	if m := failedCount.FindStringSubmatch(page); m == nil || m[1] != "4" || !strings.Contains(page, "Replayed 1 failed deliveries") ||
		!strings.Contains(page, "1 delivered") || strings.Contains(page, ">F0<") {
		t.Errorf("after replaying one the list says:\n%s", page)
	}
	if n := a.overviewFailed(t); n != 4 {
		t.Errorf("the overview counts %d failed, the list 4", n)
	}
	// The same form again (a reload of the POST): skipped, nothing sent.
	resp, _ = ops.do("POST", list+"/replay", one)
	if loc := resp.Header.Get("Location"); !strings.Contains(loc, "sent=0") || !strings.Contains(loc, "skipped=1") {
		t.Errorf("the same replay again went to %q, want nothing sent", loc)
	}

	// Selected: two names need a confirmation first.
	resp, _ = ops.do("POST", list+"/replay", url.Values{"csrf": {csrf}, "letter": {fmt.Sprint(ids["F1"]), fmt.Sprint(ids["F2"])}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, list+"/replay?") {
		t.Errorf("two selected without confirming: %d to %q, want the confirmation page", resp.StatusCode, loc)
	}
	if got := a.receivedByOrder(t); got["F1"] != 0 || got["F2"] != 0 {
		t.Errorf("an unconfirmed replay sent %v", got)
	}
	q := url.Values{"letter": {fmt.Sprint(ids["F1"]), fmt.Sprint(ids["F2"])}}
	if _, page := ops.do("GET", list+"/replay?"+q.Encode(), nil); !strings.Contains(page, "Replay 2 failed deliveries?") ||
		!strings.Contains(page, `name="confirmed" value="2"`) {
		t.Errorf("the confirmation of two:\n%s", page)
	}

	// All: confirmed with its count.
	_, page = ops.do("GET", list+"/replay?all=1", nil)
	if !strings.Contains(page, "Replay 4 failed deliveries?") || !strings.Contains(page, "<strong>4</strong>") {
		t.Fatalf("the confirmation of all:\n%s", page)
	}
	resp, _ = ops.do("POST", list+"/replay", url.Values{"csrf": {csrf}, "all": {"1"}, "confirmed": {"4"}})
	loc = resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("replay all: %d", resp.StatusCode)
	}
	_, page = ops.do("GET", loc, nil)
	if m := failedCount.FindStringSubmatch(page); m == nil || m[1] != "2" || !strings.Contains(page, "2 delivered") ||
		!strings.Contains(page, "2 failed again") || !strings.Contains(page, fmt.Sprintf(`<a href="#dl-%d">F3 (order.paid)</a>`, ids["F3"])) ||
		!strings.Contains(page, "failed again:</strong> HTTP 500: warehouse down for F4") {
		t.Errorf("after replaying all the list says:\n%s", page)
	}
	if _, page := ops.do("GET", "/console/endpoints", nil); !strings.Contains(page, ">2 failed</a>") {
		t.Errorf("the endpoints page after the replay:\n%s", page)
	}
	if n := a.overviewFailed(t); n != 2 {
		t.Errorf("the overview counts %d failed, the list 2", n)
	}
	// The order's event log (its timeline) shows the replay's answer.
	if log, err := a.db.ListDeliveries(context.Background(), ordersync.DeliveryFilter{Account: ordersync.DefaultAccount, OrderCode: "F4"}); err != nil ||
		len(log) != 1 || log[0].Outcome != ordersync.DeliveryDeadLettered || log[0].Status != 500 || log[0].Attempts != 84 ||
		!strings.Contains(log[0].Detail, "replayed, failed again: warehouse down for F4") {
		t.Errorf("F4's delivery log after its replay failed: %+v, %v", log, err)
	}
	want := map[string]int{"F0": 1, "F1": 1, "F2": 1, "F3": 1, "F4": 1}
	if got := a.receivedByOrder(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the endpoint received %v, want %v (nothing delivered sent again)", got, want)
	}

	// The API: the same list and replay.
	var listed struct {
		FailedDeliveries []struct {
			ID        int64  `json:"id"`
			OrderCode string `json:"orderCode"`
		} `json:"failedDeliveries"`
		Total int `json:"total"`
	}
	if code := apiDo(t, a.url, "GET", "/v1/endpoints/"+ep+"/failed-deliveries", "eve-token", "", &listed); code != 200 || listed.Total != 2 ||
		len(listed.FailedDeliveries) != 2 {
		t.Errorf("API list: %d %+v", code, listed)
	}
	if code := apiDo(t, a.url, "POST", "/v1/endpoints/"+ep+"/failed-deliveries/replay", "eve-token", `{"all":true}`, nil); code != http.StatusForbidden {
		t.Errorf("a viewer's API replay: %d, want 403", code)
	}
	if code := apiDo(t, a.url, "POST", "/v1/endpoints/"+ep+"/failed-deliveries/replay", "ops-token", `{"all":true,"ids":[1]}`, nil); code != http.StatusBadRequest {
		t.Errorf("both all and ids: %d, want 400", code)
	}
	a.mu.Lock()
	delete(a.refuse, "F4")
	a.mu.Unlock()
	var res struct {
		Sent        int     `json:"sent"`
		Delivered   []int64 `json:"delivered"`
		FailedAgain []int64 `json:"failedAgain"`
		Remaining   int     `json:"remaining"`
	}
	if code := apiDo(t, a.url, "POST", "/v1/endpoints/"+ep+"/failed-deliveries/replay", "ops-token", `{"all":true}`, &res); code != 200 ||
		res.Sent != 2 || len(res.Delivered) != 1 || fmt.Sprint(res.FailedAgain) != fmt.Sprint([]int64{ids["F3"]}) || res.Remaining != 1 {
		t.Errorf("API replay all: %d %+v", code, res)
	}
	if n := a.overviewFailed(t); n != 1 {
		t.Errorf("the overview counts %d failed after the API's replay, want 1", n)
	}

	trail, err := a.db.ListAudit(context.Background(), ordersync.AuditFilter{Actor: "ops", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range trail.Records {
		seen = append(seen, r.Action+" "+r.Object+" "+r.Outcome)
	}
	for _, want := range []string{"endpoint.replay-failed endpoint " + ep + ": 1 sent, 1 delivered, 0 failed again ok",
		"endpoint.replay-failed endpoint " + ep + ": 4 sent, 2 delivered, 2 failed again ok",
		"endpoint.replay-failed endpoint " + ep + ": 2 sent, 1 delivered, 1 failed again ok"} {
		if !strings.Contains(strings.Join(seen, "\n"), want) {
			t.Errorf("trail lacks %q:\n%s", want, strings.Join(seen, "\n"))
		}
	}
}

// TestConsoleFailedDisabledEndpoint: a replay to a disabled endpoint is
// refused with a page that says so, and nothing is sent.
func TestConsoleFailedDisabledEndpoint(t *testing.T) {
	t.Parallel()
	a, ids := failedEnv(t)
	disabled := true
	if _, err := a.db.UpdateEndpoint(context.Background(), a.endpoint.ID, ordersync.EndpointUpdate{Disabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	ops, csrf := signedIn(t, a.url, "ops-token")
	resp, page := ops.do("POST", "/console/endpoints/"+a.endpoint.ID+"/failed/replay", url.Values{"csrf": {csrf}, "letter": {fmt.Sprint(ids["F0"])}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "disabled") || a.received.Load() != 0 {
		t.Errorf("replay to a disabled endpoint: %d, %d sent:\n%s", resp.StatusCode, a.received.Load(), page)
	}
}
