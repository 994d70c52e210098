package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

func TestOrdersEndpoints(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	// Create two links through the API (Method 1 and Method 2).
	var codes []string
	for _, body := range []string{
		`{"lineItems":[{"product":{"name":"Combo","price":"6.50"},"quantity":2}],"orderReference":"A-1"}`,
		`{"amount":25.00,"orderReference":"A-2","metadata":[{"name":"channel","value":"web"}]}`,
	} {
		status, b := e.do(t, "POST", "/v1/payment-links", body)
		if status != http.StatusOK {
			t.Fatalf("create: %d %s", status, b)
		}
		var res ordersync.PaymentLinkResult
		if err := json.Unmarshal(b, &res); err != nil || res.OrderCode == "" || res.OrderID == "" {
			t.Fatalf("create answer %s: %v", b, err)
		}
		codes = append(codes, res.OrderCode)
	}
	if _, err := e.sim.Pay(codes[0], sim.DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	// Track picks up the payment at once.
	if status, b := e.do(t, "POST", "/v1/orders/track", `{"orderCode":"`+codes[0]+`"}`); status != http.StatusOK || !bytes.Contains(b, []byte(`"orderStatus":"PAID"`)) {
		t.Fatalf("track: %d %s", status, b)
	}

	// One order: the service's own shape, exact money, plus sync.
	status, b := e.do(t, "GET", "/v1/orders/"+codes[0], "")
	if status != http.StatusOK {
		t.Fatalf("show: %d %s", status, b)
	}
	for _, want := range []string{`"subtotal":13.00`, `"price":6.50`, `"orderStatus":"PAID"`, `"sync":{`, `"fetchCount":2`, `"buyer":{`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("order JSON lacks %s: %s", want, b)
		}
	}
	truth, _ := e.sim.Order(codes[0])
	var got ordersync.Order
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diffs := ordersync.DiffOrders(&truth, &got); len(diffs) > 0 {
		t.Errorf("API order differs from the simulator: %v", diffs)
	}

	tests := []struct {
		path   string
		status int
		count  int // orders listed, when status is 200
		total  int // orders the filter selects in all
	}{
		{"/v1/orders", 200, 2, 2},
		{"/v1/orders?status=paid", 200, 1, 1},
		{"/v1/orders?status=PENDING", 200, 1, 1},
		{"/v1/orders?status=FINALIZED", 200, 0, 0},
		{"/v1/orders?since=24h", 200, 2, 2},
		{"/v1/orders?since=2999-01-01", 200, 0, 0},
		{"/v1/orders?limit=1", 200, 1, 2},
		{"/v1/orders?status=paid,pending", 200, 2, 2},
		{"/v1/orders?status=PAID&status=pending", 200, 2, 2},
		{"/v1/orders?status=paid,SHIPPED", 400, 0, 0},
		{"/v1/orders?status=SHIPPED", 400, 0, 0},
		{"/v1/orders?since=yesterday", 400, 0, 0},
		{"/v1/orders?limit=-1", 400, 0, 0},
		{"/v1/orders?offset=1", 200, 1, 2},
		{"/v1/orders?offset=first", 400, 0, 0},
		{"/v1/orders/NOPE123", 404, 0, 0},
	}
	for _, tc := range tests {
		path := tc.path
		if tc.status == 200 && strings.HasPrefix(path, "/v1/orders?") {
			path += "&count=exact"
		} else if path == "/v1/orders" {
			path += "?count=exact"
		}
		status, b := e.do(t, "GET", path, "")
		if status != tc.status {
			t.Errorf("GET %s: %d, want %d: %s", tc.path, status, tc.status, b)
			continue
		}
		if status != 200 {
			if !bytes.Contains(b, []byte(`"status":`)) {
				t.Errorf("GET %s: not a problem body: %s", tc.path, b)
			}
			continue
		}
		if tc.path == "/v1/orders/NOPE123" {
			continue
		}
		var list struct {
			Orders []json.RawMessage `json:"orders"`
			Count  int               `json:"count"`
			Total  int               `json:"total"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		if list.Count != tc.count || len(list.Orders) != tc.count || list.Total != tc.total {
			t.Errorf("GET %s: %d orders of %d, want %d of %d", tc.path, list.Count, list.Total, tc.count, tc.total)
		}
	}

	// Validation failures name the fields and reach nothing upstream.
	before := e.sim.Stats().Checkouts
	status, b = e.do(t, "POST", "/v1/payment-links", `{"amount":0,"successUrl":"not a url"}`)
	if status != http.StatusBadRequest || !bytes.Contains(b, []byte(`"amount"`)) || !bytes.Contains(b, []byte(`"successUrl"`)) {
		t.Errorf("invalid link: %d %s", status, b)
	}
	// An amount finer than the store's currency (USD, from its mirrored
	// orders) is refused too.
	status, b = e.do(t, "POST", "/v1/payment-links", `{"amount":10.999}`)
	if status != http.StatusBadRequest || !bytes.Contains(b, []byte(`"amount":["The amount has more decimal places than USD allows (2)."]`)) {
		t.Errorf("an amount of 10.999 USD: %d %s", status, b)
	}
	if e.sim.Stats().Checkouts != before {
		t.Error("an invalid request reached the service")
	}
	if status, _ := e.do(t, "POST", "/v1/payment-links", `{not json`); status != http.StatusBadRequest {
		t.Errorf("malformed body: %d", status)
	}
	if status, b := e.do(t, "POST", "/v1/orders/track", `{"orderCode":"ZZZZZZZ"}`); status != http.StatusNotFound {
		t.Errorf("track unknown order: %d %s", status, b)
	}
	if status, _ := e.do(t, "POST", "/v1/orders/track", `{}`); status != http.StatusBadRequest {
		t.Errorf("track without code: %d", status)
	}

	// The event log: an order's own events, and any order's by id, held
	// in the mirror or not.
	paid, err := e.db.FindOrderByCode(context.Background(), "default", codes[0])
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := e.db.RecordEvents(context.Background(), []ordersync.EventRecord{
		{MsgID: "ev-paid", Account: "default", ReceivedAt: now, Type: ordersync.EventSuccessPayment, OrderCode: codes[0], OrderID: paid.Order.OrderID,
			Signature: ordersync.SignatureValid, Outcome: ordersync.OutcomeSynced},
		{MsgID: "ev-unheld", Account: "default", ReceivedAt: now.Add(-time.Second), Type: ordersync.EventCreated, OrderID: "424242",
			Signature: ordersync.SignatureValid, Outcome: ordersync.OutcomeDeadLettered, Detail: "unresolved"},
	}); err != nil {
		t.Fatal(err)
	}
	// The order's delivery to an HTTP endpoint, a second after its webhook.
	if err := e.db.RecordDeliveries(context.Background(), []ordersync.DeliveryRecord{{WebhookID: "msg_paid", EndpointID: "erp",
		Event: ordersync.HookOrderPaid, Account: "default", OrderCode: codes[0], OrderStatus: ordersync.StatusPaid,
		Outcome: ordersync.DeliveryDelivered, Attempts: 2, Status: 204, At: now.Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	delivery := `{"kind":"delivery","at":"` + now.Add(time.Second).UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano) +
		`","type":"order.paid","orderCode":"` + codes[0] + `","orderStatus":"PAID","endpointId":"erp","webhookId":"msg_paid","attempts":2,"status":204,"outcome":"delivered"}`
	for _, tc := range []struct {
		path       string
		status     int
		want, lack []string
	}{
		{"/v1/orders/" + codes[0] + "/events", 200, []string{`{"events":[` + delivery + `,{"kind":"webhook","at":`, `"msgId":"ev-paid"`, `"outcome":"synced"`}, []string{"ev-unheld"}},
		{"/v1/events?orderId=424242", 200, []string{`"msgId":"ev-unheld"`, `"detail":"unresolved"`}, []string{"ev-paid", "msg_paid"}},
		{"/v1/events?orderCode=" + codes[0], 200, []string{`"msgId":"ev-paid"`, delivery}, []string{"ev-unheld"}},
		{"/v1/events?orderCode=" + codes[0] + "&limit=1", 200, []string{delivery}, []string{"ev-paid"}},
		{"/v1/events?limit=1", 200, []string{`"msgId":"ev-paid"`}, []string{"ev-unheld", "msg_paid"}},
		{"/v1/events?msgId=ev-unheld", 200, []string{`"msgId":"ev-unheld"`}, []string{"ev-paid", "msg_paid"}},
		{"/v1/events?orderId=1", 200, []string{`{"events":[]}`}, nil},
		{"/v1/events?limit=many", 400, []string{"limit"}, nil},
	} {
		status, b := e.do(t, "GET", tc.path, "")
		if status != tc.status {
			t.Errorf("GET %s: %d %s, want %d", tc.path, status, b, tc.status)
			continue
		}
		for _, w := range tc.want {
			if !bytes.Contains(b, []byte(w)) {
				t.Errorf("GET %s lacks %s: %s", tc.path, w, b)
			}
		}
		for _, l := range tc.lack {
			if bytes.Contains(b, []byte(l)) {
				t.Errorf("GET %s holds %s: %s", tc.path, l, b)
			}
		}
	}

	// Operational endpoints.
	if status, _ := e.do(t, "GET", "/healthz", ""); status != 200 {
		t.Errorf("healthz %d", status)
	}
	if status, _ := e.do(t, "GET", "/readyz", ""); status != 200 {
		t.Errorf("readyz %d", status)
	}
	e.ready = context.DeadlineExceeded
	if status, _ := e.do(t, "GET", "/readyz", ""); status != http.StatusServiceUnavailable {
		t.Errorf("readyz when not ready: %d", status)
	}
	// An order recorded but not fetched yet counts as UNKNOWN.
	if err := e.db.RecordOrderRef(context.Background(), ordersync.OrderRef{Account: "default", Code: "recorded-only"}); err != nil {
		t.Fatal(err)
	}
	if status, b := e.do(t, "GET", "/metrics", ""); status != 200 || !bytes.Contains(b, []byte(`ordersync_mirror_orders{status="PAID"} 1`)) ||
		!bytes.Contains(b, []byte(`ordersync_mirror_orders{status="UNKNOWN"} 1`)) {
		t.Errorf("metrics: %d, want the PAID and UNKNOWN gauges at 1:\n%s", status, b)
	}
}

func TestDeadLetterEndpoints(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := context.Background()
	body := []byte(`{"orderId":"424242","orderReference":null,"orderType":"FASTLINK_CHARGE","type":"Created"}`)
	id, err := e.db.AddDeadLetter(ctx, ordersync.DeadLetter{
		MsgID: "m-1", Account: ordersync.DefaultAccount, Reason: ordersync.ReasonUnresolved, Attempts: 6,
		LastError: "no order with id 424242", OrderID: "424242", Body: body, CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	status, b := e.do(t, "GET", "/v1/dead-letters", "")
	if status != 200 || !bytes.Contains(b, []byte(`"reason":"unresolved"`)) || !bytes.Contains(b, []byte(`"orderId":424242`)) {
		t.Fatalf("list: %d %s", status, b)
	}
	if status, b := e.do(t, "GET", "/v1/dead-letters?limit=all", ""); status != http.StatusBadRequest || !bytes.Contains(b, []byte("limit")) {
		t.Errorf("dead letters with a bad limit: %d %s, want 400 naming limit", status, b)
	}
	for _, path := range []string{"/v1/dead-letters?reason=bogus", "/v1/dead-letters/replay?reason=bogus"} {
		method := map[bool]string{true: "POST", false: "GET"}[strings.HasSuffix(path, "replay?reason=bogus")]
		if status, b := e.do(t, method, path, ""); status != 400 || !bytes.Contains(b, []byte(`unknown dead letter reason \"bogus\"`)) {
			t.Errorf("%s %s: %d %s, want 400 naming the reason", method, path, status, b)
		}
	}
	if status, b := e.do(t, "GET", "/v1/dead-letters?reason=malformed", ""); status != 200 || !bytes.Contains(b, []byte(`"count":0`)) {
		t.Errorf("filter by reason: %d %s", status, b)
	}
	idPath := "/v1/dead-letters/" + jsonInt(id)
	if status, b := e.do(t, "GET", idPath, ""); status != 200 || !bytes.Contains(b, []byte(`"body":{"orderId":"424242"`)) {
		t.Errorf("show: %d %s", status, b)
	}
	for path, want := range map[string]int{"/v1/dead-letters/999": 404, "/v1/dead-letters/x": 400} {
		if status, _ := e.do(t, "GET", path, ""); status != want {
			t.Errorf("GET %s: %d, want %d", path, status, want)
		}
	}

	// Replay puts the original body back on the queue, under a new MsgID.
	if status, b := e.do(t, "POST", idPath+"/replay", ""); status != 200 {
		t.Fatalf("replay: %d %s", status, b)
	}
	ds, err := e.queue.Events().Next(ctx, 10, 2*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("queued after replay: %d, %v", len(ds), err)
	}
	ev := ds[0].Event()
	if !bytes.Equal(ev.Body, body) || ev.ReplayOf != id || ev.Cause != ordersync.CauseReplay || ev.MsgID == "m-1" {
		t.Errorf("replayed event %+v", ev)
	}
	_ = ds[0].Ack(ctx)
	// Replayed letters leave the default list; --all style shows them.
	if _, b := e.do(t, "GET", "/v1/dead-letters", ""); !bytes.Contains(b, []byte(`"count":0`)) {
		t.Errorf("a replayed letter is still listed: %s", b)
	}
	if _, b := e.do(t, "GET", "/v1/dead-letters?replayed=true", ""); !bytes.Contains(b, []byte(`"replayCount":1`)) {
		t.Errorf("replayed letter not shown with replayed=true: %s", b)
	}
	if status, b := e.do(t, "POST", "/v1/dead-letters/replay", ""); status != 200 || !bytes.Contains(b, []byte(`"replayed":0`)) {
		t.Errorf("replay all with nothing left: %d %s", status, b)
	}
	if status, _ := e.do(t, "POST", "/v1/dead-letters/999/replay", ""); status != 404 {
		t.Errorf("replay unknown: %d", status)
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTokens: with tokens set, everything but the probes needs one of them.
func TestTokens(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.Config{URL: testdb.SQLitePath(t), IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	server, err := admin.New(admin.Config{Orders: db, Tokens: operators("old-token", "new-token")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	tests := []struct {
		path, auth string
		want       int
	}{
		{"/v1/orders", "", 401},
		{"/v1/orders", "Bearer wrong", 401},
		{"/v1/orders", "Basic b2xkLXRva2Vu", 401},
		{"/v1/orders", "Bearer old-token", 200},
		{"/v1/orders", "Bearer new-token", 200},
		{"/healthz", "", 200},
		{"/readyz", "", 200},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.auth, resp.StatusCode, tc.want)
		}
		if tc.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
}

// TestUpstreamGateAnswersAtOnce: once the upstream asked to wait (429 with
// a Retry-After far beyond the cap), tracking an order and creating a link
// answer 503 with a Retry-After at once, without sending a request, rather
// than holding the caller until the wait has passed.
func TestUpstreamGateAnswersAtOnce(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	code := e.createLink(t, `{"amount":5.00,"orderReference":"G-1"}`)
	if err := e.sim.SetFaults(sim.Faults{RateLimitRate: 1, RetryAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// A client that gives up long before the upstream's wait: the answer
	// must come before it does.
	client := &http.Client{Timeout: 20 * time.Second}
	call := func(path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", e.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	track := `{"orderCode":"` + code + `"}`
	// The first track meets the 429 itself.
	if status, retry := call("/v1/orders/track", track); status != http.StatusServiceUnavailable || retry != "300" {
		t.Fatalf("track during a 429: %d Retry-After %q, want 503 Retry-After 300 (the cap)", status, retry)
	}
	before := e.sim.Stats()
	for _, c := range []struct{ path, body string }{
		{"/v1/orders/track", track},
		{"/v1/payment-links", `{"amount":5.00,"orderReference":"G-2"}`},
	} {
		status, retry := call(c.path, c.body)
		if secs, err := strconv.Atoi(retry); status != http.StatusServiceUnavailable || err != nil || secs < 1 || secs > 300 {
			t.Errorf("%s while the gate is closed: %d Retry-After %q, want 503 with 1..300", c.path, status, retry)
		}
	}
	// Every request the simulator answers now is a counted fault.
	faults := func(s sim.Stats) (n int64) {
		for _, v := range s.Faults {
			n += v
		}
		return n
	}
	if after := e.sim.Stats(); faults(after) != faults(before) {
		t.Errorf("%d requests sent upstream while the gate was closed", faults(after)-faults(before))
	}
}

// TestUnknownAccount: every endpoint that routes a request to an account
// (link creation, tracking, replay) answers an account the process does
// not serve the same way: 404 with the router's error, naming the account,
// and nothing sent upstream or queued.
func TestUnknownAccount(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := context.Background()
	id, err := e.db.AddDeadLetter(ctx, ordersync.DeadLetter{
		MsgID: "m-ghost", Account: "ghost", Reason: ordersync.ReasonRejected, Attempts: 1,
		LastError: "account \"ghost\": unknown account", Body: []byte(`{"orderCode":"GHOST01","type":"Created"}`), CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, want := ordersync.Accounts[int](nil).For("ghost")
	before := e.sim.Stats()
	for _, c := range []struct{ path, body string }{
		{"/v1/payment-links?account=ghost", `{"amount":5.00,"orderReference":"U-1"}`},
		{"/v1/orders/track?account=ghost", `{"orderCode":"ABC123"}`},
		{"/v1/dead-letters/" + jsonInt(id) + "/replay", ""},
		{"/v1/dead-letters/replay?account=ghost", ""},
	} {
		status, b := e.do(t, "POST", c.path, c.body)
		var p api.Problem
		if err := json.Unmarshal(b, &p); err != nil || status != http.StatusNotFound || !strings.HasSuffix(p.Title, ": "+want.Error()) {
			t.Errorf("POST %s: %d %s, want 404 ending in %q", c.path, status, b, want)
		}
	}
	// A replay of every letter leaves the unknown account's alone.
	if status, b := e.do(t, "POST", "/v1/dead-letters/replay", ""); status != 200 || !bytes.Contains(b, []byte(`"replayed":0`)) {
		t.Errorf("replay all: %d %s, want none replayed", status, b)
	}
	if after := e.sim.Stats(); after.Checkouts+after.CheckoutsRejected != before.Checkouts+before.CheckoutsRejected || after.Gets != before.Gets {
		t.Errorf("requests sent upstream for an unknown account: %+v, then %+v", before, after)
	}
	if ds, err := e.queue.Events().Next(ctx, 10, 500*time.Millisecond); err == nil && len(ds) > 0 {
		t.Errorf("%d events queued for an unknown account", len(ds))
	}
	dl, err := e.db.FindDeadLetter(ctx, id)
	if err != nil || dl.ReplayCount != 0 {
		t.Errorf("the unknown account's letter: %+v, %v; want it left unreplayed", dl, err)
	}
}
