package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

const testEndpointSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestConfigEndpoints: the file's endpoints load, get an id from their URL
// unless they name one, and each wrong field is named.
func TestConfigEndpoints(t *testing.T) {
	full := map[string]string{"ORDERSYNC_API_BASE_URL": "http://x", "ORDERSYNC_SECRET_KEY": "k", "ORDERSYNC_WEBHOOK_SECRET": "s"}
	file := `endpoints:
  - id: erp
    url: https://erp.example.com/hook
    secret: ` + testEndpointSecret + `
    events: [order.paid, order.status_changed]
    description: ERP
  - url: https://wms.example.com/hook
    secret: ` + testEndpointSecret + `
    events: [order.paid]
`
	cfg, err := loadTestConfig(t, file, full)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.validateServe(); err != nil {
		t.Fatalf("validateServe: %v", err)
	}
	params, err := cfg.endpointParams()
	if err != nil || len(params) != 2 {
		t.Fatalf("endpointParams = %v, %v", params, err)
	}
	if params[0].ID != "erp" || len(params[0].Events) != 2 || params[0].Description != "ERP" {
		t.Errorf("first endpoint %+v", params[0])
	}
	if !strings.HasPrefix(params[1].ID, "cfg-") || len(params[1].ID) != len("cfg-")+12 {
		t.Errorf("derived id %q", params[1].ID)
	}
	for _, tc := range []struct{ name, entry, want string }{
		{"bad url", "url: not-a-url\n    secret: " + testEndpointSecret + "\n    events: [order.paid]", "endpoints[0].url"},
		{"no events", "url: https://x.example\n    secret: " + testEndpointSecret, "endpoints[0].events"},
		{"unknown event", "url: https://x.example\n    secret: " + testEndpointSecret + "\n    events: [order.created]", "endpoints[0].events"},
		{"bad secret", "url: https://x.example\n    secret: hunter2\n    events: [order.paid]", "endpoints[0].secret"},
		{"bad id", "id: a.b\n    url: https://x.example\n    secret: " + testEndpointSecret + "\n    events: [order.paid]", "endpoints[0].id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTestConfig(t, "endpoints:\n  - "+tc.entry+"\n", full)
			if err == nil {
				err = cfg.validateServe()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
}

// TestEndpointsSeededAtStart: a start writes the file's endpoints into the
// database; a restart with a shorter file removes the dropped one and keeps
// endpoints created at run time.
func TestEndpointsSeededAtStart(t *testing.T) {
	dir := t.TempDir()
	withEndpoints := func(eps ...EndpointConfig) func(*Config) {
		return func(c *Config) { c.Endpoints = eps }
	}
	erp := EndpointConfig{ID: "erp", URL: "http://127.0.0.1:9/erp", Secret: testEndpointSecret, Events: []string{"order.paid"}}
	wms := EndpointConfig{ID: "wms", URL: "http://127.0.0.1:9/wms", Secret: testEndpointSecret, Events: []string{"order.status_changed"}}
	ctx := context.Background()
	st, err := startStack(ctx, stackOptions{DataDir: dir, Logger: testLogger(t), Configure: withEndpoints(erp, wms)})
	if err != nil {
		t.Fatal(err)
	}
	if eps, err := st.Program.db.ListEndpoints(ctx); err != nil || len(eps) != 2 {
		st.Close()
		t.Fatalf("after the first start: %v, %v", eps, err)
	}
	api, err := st.Program.db.CreateEndpoint(ctx, ordersync.EndpointParams{URL: "http://127.0.0.1:9/api", Events: []ordersync.HookEvent{ordersync.HookOrderPaid}, Secret: testEndpointSecret})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	st = startTestStack(t, stackOptions{DataDir: dir, Configure: withEndpoints(erp)})
	eps, err := st.Program.db.ListEndpoints(ctx)
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
