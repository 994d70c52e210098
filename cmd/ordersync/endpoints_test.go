package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
)

const testEndpointSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestEndpointsSeededAtStart: a start writes the file's endpoints into the
// database; a restart with a shorter file removes the dropped one and keeps
// endpoints created at run time.
func TestEndpointsSeededAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	withEndpoints := func(eps ...app.EndpointConfig) func(*app.Config) {
		return func(c *app.Config) { c.Endpoints = eps }
	}
	erp := app.EndpointConfig{ID: "erp", URL: "http://127.0.0.1:9/erp", Secret: testEndpointSecret, Events: []string{"order.paid"}}
	wms := app.EndpointConfig{ID: "wms", URL: "http://127.0.0.1:9/wms", Secret: testEndpointSecret, Events: []string{"order.status_changed"}}
	ctx := context.Background()
	st, err := app.StartStack(ctx, app.StackOptions{DataDir: dir, Logger: testLogger(t), Configure: withEndpoints(erp, wms)})
	if err != nil {
		t.Fatal(err)
	}
	if eps, err := st.Program.DB().ListEndpoints(ctx); err != nil || len(eps) != 2 {
		st.Close()
		t.Fatalf("after the first start: %v, %v", eps, err)
	}
	api, err := st.Program.DB().CreateEndpoint(ctx, ordersync.EndpointParams{URL: "http://127.0.0.1:9/api", Events: []ordersync.HookEvent{ordersync.HookOrderPaid}, Secret: testEndpointSecret})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	st = startTestStack(t, app.StackOptions{DataDir: dir, Configure: withEndpoints(erp)})
	eps, err := st.Program.DB().ListEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range eps {
		ids = append(ids, e.ID+"/"+string(e.Source))
	}
	if strings.Join(ids, ",") != api.ID+"/api,erp/config" {
		t.Errorf("after a restart without wms: %v", ids)
	}
}

// hookReceiver is a verifying endpoint on loopback that records what it got.
type hookReceiver struct {
	mu     sync.Mutex
	secret string
	got    []hookRequest
}

type hookRequest struct {
	id, typ, order, status string
	from                   *string
	fetchSeq               int64
	verified               error
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	req := hookRequest{id: r.Header.Get(delivery.HeaderID), verified: delivery.Verify(h.secret, r.Header, body, 0)}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			OrderCode    string `json:"orderCode"`
			OrderStatus  string `json:"orderStatus"`
			StatusChange struct {
				From *string `json:"from"`
			} `json:"statusChange"`
			Sync struct {
				FetchSeq int64 `json:"fetchSeq"`
			} `json:"sync"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	req.typ, req.order, req.status, req.fetchSeq = ev.Type, ev.Data.OrderCode, ev.Data.OrderStatus, ev.Data.Sync.FetchSeq
	req.from = ev.Data.StatusChange.From
	h.got = append(h.got, req)
	w.WriteHeader(http.StatusOK)
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

func adminDo(t *testing.T, method, url string, body any, into any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil && len(b) > 0 {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// TestFulfilmentOverHTTP: an endpoint added through the admin API receives
// every order's PAID once and its status changes in order, signed; it is
// tested, rotated, replayed to and deleted without a restart.
func TestFulfilmentOverHTTP(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{Seed: 11})
	hook := &hookReceiver{}
	srv := httptest.NewServer(hook)
	t.Cleanup(srv.Close)
	base := st.Program.AdminURL() + "/v1/endpoints"

	var bad map[string]any
	if code := adminDo(t, http.MethodPost, base, map[string]any{"url": srv.URL, "events": []string{"order.created"}}, &bad); code != http.StatusBadRequest {
		t.Errorf("unknown event: %d %v", code, bad)
	}
	var ep api.EndpointJSON
	if code := adminDo(t, http.MethodPost, base, map[string]any{"url": srv.URL, "events": []string{"order.paid", "order.status_changed"}, "description": "test"}, &ep); code != http.StatusCreated {
		t.Fatalf("POST /v1/endpoints: %d", code)
	}
	if ep.ID == "" || delivery.ValidateSecret(ep.Secret) != nil {
		t.Fatalf("created %+v: want an id and a generated secret", ep)
	}
	hook.mu.Lock()
	hook.secret = ep.Secret
	hook.mu.Unlock()

	rng := rand.New(rand.NewPCG(11, 11))
	codes, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 30, rng)
	if err != nil {
		t.Fatal(err)
	}
	acts := st.Sim.ActAsBuyers(codes, rng)
	if acts.Paid == 0 {
		t.Fatalf("no order paid: %+v", acts)
	}
	waitMirrorMatches(t, st, 20*time.Second)
	paidOrders := map[string]bool{}
	for _, o := range st.Sim.Orders() {
		if o.OrderStatus.IsPaidState() {
			paidOrders[o.OrderCode] = true
		}
	}
	testenv.WaitFor(t, 20*time.Second, "PAID delivered for every paid order", func() bool {
		paid := map[string]bool{}
		for _, r := range hook.requests() {
			if r.typ == "order.paid" {
				paid[r.order] = true
			}
		}
		return len(paid) == len(paidOrders)
	})
	// Every event is published and the endpoint's consumer has settled it:
	// a settled event is not delivered again, so the record below is all
	// the endpoint will get.
	testenv.WaitFor(t, 20*time.Second, "every event settled at the endpoint", func() bool {
		n, err := st.Program.Undelivered(context.Background(), ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	ids := map[string]int{}
	lastSeq := map[string]int64{}
	paidOnce := map[string]int{}
	lastTo := map[string]string{}
	for _, r := range hook.requests() {
		if r.typ == "order.status_changed" {
			// Each change starts where the one before it ended.
			if from := ""; r.from != nil {
				from = *r.from
				if from != lastTo[r.order] {
					t.Errorf("order %s: change from %s after a change to %s", r.order, from, lastTo[r.order])
				}
			} else if lastTo[r.order] != "" {
				t.Errorf("order %s: a change from nothing after one to %s", r.order, lastTo[r.order])
			}
			lastTo[r.order] = r.status
		}
		if r.verified != nil {
			t.Errorf("%s: signature: %v", r.id, r.verified)
		}
		ids[r.id]++
		if r.fetchSeq < lastSeq[r.order] {
			t.Errorf("order %s: an event of fetch %d after one of fetch %d", r.order, r.fetchSeq, lastSeq[r.order])
		}
		lastSeq[r.order] = r.fetchSeq
		if r.typ == "order.paid" {
			paidOnce[r.order]++
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("webhook-id %s delivered %d times", id, n)
		}
	}
	for code := range paidOrders {
		if paidOnce[code] != 1 {
			t.Errorf("order %s: %d PAID deliveries", code, paidOnce[code])
		}
	}
	t.Logf("%d deliveries, PAID for %d of %d paid orders", len(ids), len(paidOnce), len(paidOrders))

	var rep ordersync.DeliveryReport
	if code := adminDo(t, http.MethodPost, base+"/"+ep.ID+"/test", nil, &rep); code != http.StatusOK || !rep.Delivered {
		t.Errorf("test: %d %+v", code, rep)
	}
	var rotated api.EndpointJSON
	if code := adminDo(t, http.MethodPost, base+"/"+ep.ID+"/rotate-secret", nil, &rotated); code != http.StatusOK || rotated.Secret == ep.Secret || rotated.PreviousSecretUntil == nil {
		t.Errorf("rotate-secret: %d %+v", code, rotated)
	}
	// The receiver still holds the old secret: the grace period's second
	// signature keeps its deliveries valid.
	n := len(hook.requests())
	if code := adminDo(t, http.MethodPost, base+"/"+ep.ID+"/test", nil, &rep); code != http.StatusOK || !rep.Delivered {
		t.Errorf("test after rotation: %d %+v", code, rep)
	}
	if r := hook.requests()[n]; r.verified != nil {
		t.Errorf("after rotation the old secret no longer verifies: %v", r.verified)
	}

	var queued map[string]int
	since := time.Now().Add(-time.Hour).Format(time.RFC3339)
	if code := adminDo(t, http.MethodPost, base+"/"+ep.ID+"/replay", map[string]string{"since": since}, &queued); code != http.StatusAccepted || queued["queued"] != len(ids) {
		t.Errorf("replay: %d %v, want %d queued", code, queued, len(ids))
	}
	var list struct {
		Endpoints []api.EndpointJSON `json:"endpoints"`
	}
	if code := adminDo(t, http.MethodGet, base, nil, &list); code != http.StatusOK || len(list.Endpoints) != 1 || list.Endpoints[0].Secret != "" {
		t.Errorf("list: %d %+v", code, list)
	}
	var patched api.EndpointJSON
	if code := adminDo(t, http.MethodPatch, base+"/"+ep.ID, map[string]any{"disabled": true}, &patched); code != http.StatusOK || !patched.Disabled {
		t.Errorf("PATCH disabled: %d %+v", code, patched)
	}
	if code := adminDo(t, http.MethodDelete, base+"/"+ep.ID, nil, nil); code != http.StatusNoContent {
		t.Errorf("DELETE: %d", code)
	}
	if code := adminDo(t, http.MethodGet, base+"/"+ep.ID, nil, &bad); code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d", code)
	}
}

// TestEndpointsCLI: the endpoints commands against a running service, with
// `endpoints listen` as the endpoint.
func TestEndpointsCLI(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{Seed: 3})
	adm := "--admin-url=" + st.Program.AdminURL()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	listenCtx, stopListen := context.WithCancel(context.Background())
	listenOut := &testenv.Buffer{}
	listenDone := make(chan error, 1)
	go func() {
		cmd := newRootCommand()
		cmd.SetOut(listenOut)
		cmd.SetErr(listenOut)
		cmd.SetArgs([]string{"endpoints", "listen", "--secret", testEndpointSecret, "--listen", addr})
		listenDone <- cmd.ExecuteContext(listenCtx)
	}()
	t.Cleanup(func() {
		stopListen()
		if err := <-listenDone; err != nil {
			t.Errorf("endpoints listen: %v", err)
		}
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; listen printed:\n%s", what, listenOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("listen to start", func() bool { return strings.Contains(listenOut.String(), "listening on") })

	out, err := runCLI(t, "endpoints", "add", adm, "--url", "http://"+addr+"/", "--secret", testEndpointSecret,
		"--event", "order.paid", "--event", "order.status_changed", "--description", "cli")
	if err != nil {
		t.Fatalf("endpoints add: %v\n%s", err, out)
	}
	id := strings.Fields(strings.TrimPrefix(out, "endpoint "))[0]
	if !strings.HasPrefix(id, "ep_") {
		t.Fatalf("endpoints add printed %q", out)
	}
	if out, err = runCLI(t, "endpoints", "list", adm); err != nil || !strings.Contains(out, id) || !strings.Contains(out, "\n1 endpoint\n") {
		t.Errorf("endpoints list: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "endpoints", "show", adm, id); err != nil || !strings.Contains(out, "Events       order.paid, order.status_changed") || !strings.Contains(out, "State        enabled") {
		t.Errorf("endpoints show: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "endpoints", "show", adm, id, "--json"); err != nil || !strings.Contains(out, `"id": "`+id+`"`) {
		t.Errorf("endpoints show --json: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "endpoints", "test", adm, id); err != nil || !strings.Contains(out, `"delivered": true`) {
		t.Errorf("endpoints test: %v\n%s", err, out)
	}
	waitFor("the ping", func() bool { return strings.Contains(listenOut.String(), "ping  verified") })

	codes, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 1, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sim.Pay(codes[0], ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	waitFor("order.paid", func() bool { return strings.Contains(listenOut.String(), "order.paid  verified  order "+codes[0]) })

	if out, err = runCLI(t, "endpoints", "update", adm, id, "--description", "renamed", "--disable"); err != nil || !strings.Contains(out, `"disabled": true`) || !strings.Contains(out, "renamed") {
		t.Errorf("endpoints update --disable: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "endpoints", "update", adm, id, "--enable"); err != nil || !strings.Contains(out, `"disabled": false`) {
		t.Errorf("endpoints update --enable: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "endpoints", "replay", adm, id, "--since", "1h"); err != nil || !strings.Contains(out, "events queued") {
		t.Errorf("endpoints replay: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "endpoints", "rotate-secret", adm, id); err != nil || !strings.Contains(out, "new secret: whsec_") {
		t.Errorf("endpoints rotate-secret: %v\n%s", err, out)
	}
	// listen still holds the old secret, which signs during the grace period.
	if out, err = runCLI(t, "endpoints", "test", adm, id); err != nil {
		t.Errorf("endpoints test after rotation: %v\n%s", err, out)
	}
	if strings.Contains(listenOut.String(), "REJECTED") {
		t.Errorf("listen rejected a delivery:\n%s", listenOut.String())
	}
	if out, err = runCLI(t, "endpoints", "remove", adm, id); err != nil {
		t.Errorf("endpoints remove: %v\n%s", err, out)
	}
	if _, err = runCLI(t, "endpoints", "show", adm, id); err == nil || !strings.Contains(err.Error(), "no endpoint") {
		t.Errorf("endpoints show of a removed endpoint: %v", err)
	}
	t.Logf("listen printed:\n%s", listenOut.String())
}

// TestEndpointsDeadLettersCLI: a delivery refused with a 4xx is listed and,
// once the endpoint accepts it, replayed from the command line.
func TestEndpointsDeadLettersCLI(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{Seed: 4})
	adm := "--admin-url=" + st.Program.AdminURL()
	var mu sync.Mutex
	refuse := true
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, r.Header.Get(delivery.HeaderID))
		if refuse {
			http.Error(w, "unknown customer", http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	out, err := runCLI(t, "endpoints", "add", adm, "--url", srv.URL, "--event", "order.paid")
	if err != nil {
		t.Fatalf("endpoints add: %v\n%s", err, out)
	}
	id := strings.Fields(strings.TrimPrefix(out, "endpoint "))[0]
	codes, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 1, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sim.Pay(codes[0], ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	testenv.Await(t, 15*time.Second, 100*time.Millisecond, func() error {
		out, err = runCLI(t, "endpoints", "dead-letters", adm, "--endpoint", id)
		if err != nil || !strings.Contains(out, "1 delivery dead letters") {
			return fmt.Errorf("no dead letter: %v\n%s", err, out)
		}
		return nil
	})
	if !strings.Contains(out, "order.paid") || !strings.Contains(out, codes[0]) || !strings.Contains(out, "422") || !strings.Contains(out, "unknown customer") {
		t.Errorf("dead-letters:\n%s", out)
	}
	letter := strings.Fields(strings.Split(out, "\n")[1])[0]
	mu.Lock()
	refuse = false
	mu.Unlock()
	if out, err = runCLI(t, "endpoints", "replay-dead-letter", adm, letter); err != nil || !strings.Contains(out, `"delivered": true`) {
		t.Fatalf("replay-dead-letter: %v\n%s", err, out)
	}
	mu.Lock()
	if len(ids) != 2 || ids[0] != ids[1] {
		t.Errorf("webhook-ids of the refusal and the replay: %v", ids)
	}
	mu.Unlock()
	if out, err = runCLI(t, "endpoints", "dead-letters", adm); err != nil || !strings.Contains(out, "0 delivery dead letters") {
		t.Errorf("after the replay: %v\n%s", err, out)
	}
}
