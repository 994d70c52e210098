package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/sim"
)

// TestOneDispatcherAcrossProcesses: two worker processes of one deployment
// (PostgreSQL, an external NATS) share an endpoint; the one holding the
// deliveries lease makes every delivery, so each order's events pass
// through one process's lanes and arrive in order.
func TestOneDispatcherAcrossProcesses(t *testing.T) {
	dbURL, natsURL, ns := externalServices(t)
	ctx := context.Background()
	simulator, err := sim.New(sim.Config{SecretKey: "sk-deliver", Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { simulator.Close() })
	simURL, err := simulator.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var received atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)

	var programs []*Program
	for i := range 2 {
		cfg := defaultConfig()
		cfg.APIBaseURL, cfg.SecretKey, cfg.WebhookSecrets = simURL, "sk-deliver", []string{"whsec"}
		cfg.DataDir = filepath.Join(t.TempDir(), "p")
		cfg.DatabaseURL, cfg.NATSURL, cfg.NATSNamespace = dbURL, natsURL, ns
		cfg.Role, cfg.Listen, cfg.AdminListen = "worker,relay", "127.0.0.1:0", "127.0.0.1:0"
		p, err := NewProgram(ctx, cfg, testLogger(t).With("process", i))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(runCtx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("process %d: %v", i, err)
			}
			p.Close()
		})
		programs = append(programs, p)
	}
	c := &admin.Client{BaseURL: programs[0].AdminURL()}
	if err := c.Do(ctx, http.MethodPost, "/v1/endpoints", admin.EndpointParamsJSON{URL: hook.URL,
		Events: []string{string(ordersync.HookOrderStatusChanged)}, Secret: demoEndpointSecret}, nil); err != nil {
		t.Fatal(err)
	}
	// Every process reads the endpoints again within 2 s: after that, any
	// process that delivers has a consumer for it.
	time.Sleep(3 * time.Second)
	// Each link created through the admin API is fetched at once: its first
	// status change goes to the endpoint.
	const orders = 40
	for i := range orders {
		amount := ordersync.MustAmount("4.25")
		c := &admin.Client{BaseURL: programs[i%2].AdminURL()}
		if err := c.Do(ctx, http.MethodPost, "/v1/payment-links", ordersync.PaymentLinkParams{Amount: &amount}, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for received.Load() < orders && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := received.Load(); n < orders {
		t.Fatalf("the endpoint received %d deliveries for %d new orders", n, orders)
	}
	var attempts []float64
	for _, p := range programs {
		attempts = append(attempts, counterValue(p.Registry(), "ordersync_delivery_attempts_total", "result", "2xx"))
	}
	if (attempts[0] == 0) == (attempts[1] == 0) {
		t.Errorf("deliveries by process: %v; want every one by the process holding the lease", attempts)
	}
}
