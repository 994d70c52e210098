package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/fulfilment"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestOneDispatcherAcrossProcesses: two worker processes of one deployment
// (PostgreSQL, an external NATS) share an endpoint; the one holding the
// deliveries lease makes every delivery, so each order's events pass
// through one process's lanes and arrive in order.
func TestOneDispatcherAcrossProcesses(t *testing.T) {
	// It waits on the deliveries lease and the endpoint consumers,
	// computing little, on a schema and a NATS namespace of its own.
	t.Parallel()
	_, programs := startDeployment(t, 2, "worker,relay", "sk-deliver", 9)
	ctx := context.Background()
	var received atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)

	c := &admin.Client{BaseURL: programs[0].AdminURL()}
	if err := c.Do(ctx, http.MethodPost, "/v1/endpoints", api.EndpointParamsJSON{URL: hook.URL,
		Events: []string{string(ordersync.HookOrderStatusChanged)}, Secret: fulfilment.Secret}, nil); err != nil {
		t.Fatal(err)
	}
	// No wait for the processes to read the endpoint: its consumer starts
	// at the endpoint's creation, so the events published from now on
	// reach it whenever the delivering process opens it.
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
	testenv.Await(t, 30*time.Second, 20*time.Millisecond, func() error {
		if n := received.Load(); n < orders {
			return fmt.Errorf("the endpoint received %d deliveries for %d new orders", n, orders)
		}
		return nil
	})
	var attempts []float64
	for _, p := range programs {
		attempts = append(attempts, counterValue(p.Registry(), "ordersync_delivery_attempts_total", "result", "2xx"))
	}
	if (attempts[0] == 0) == (attempts[1] == 0) {
		t.Errorf("deliveries by process: %v; want every one by the process holding the lease", attempts)
	}
}
