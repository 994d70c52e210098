package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// TestAccountsEndToEnd: one deployment serves a second merchant account
// with its own service, key and webhook secret. Its links are created
// through the admin API with ?account=, its webhooks arrive on
// /webhooks/paymentlink/acme, and its orders are mirrored under its name,
// while the default account keeps working unchanged.
func TestAccountsEndToEnd(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acmeURL := "http://" + ln.Addr().String()
	st := startTestStack(t, app.StackOptions{Configure: func(c *app.Config) {
		c.Accounts = map[string]app.AccountConfig{"acme": {APIBaseURL: acmeURL, SecretKey: "sk_acme", WebhookSecrets: []string{"whsec_acme"}}}
	}})
	acme, err := sim.New(sim.Config{SecretKey: "sk_acme", WebhookURL: st.Program.WebhookURL() + "/acme", WebhookSecret: "whsec_acme", Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); acme.Close() })
	if err := acme.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := acme.Serve(ln); err != nil {
		t.Fatal(err)
	}

	var codes []string
	for _, account := range []string{"acme", "acme", ""} {
		body, _ := json.Marshal(map[string]any{"amount": "12.50", "orderReference": "r-" + account})
		resp, err := http.Post(st.Program.AdminURL()+"/v1/payment-links?account="+account, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var res ordersync.PaymentLinkResult
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 {
			t.Fatalf("create for %q: %d %v", account, resp.StatusCode, err)
		}
		resp.Body.Close()
		codes = append(codes, res.OrderCode)
	}
	if _, err := acme.Pay(codes[0], ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := acme.Cancel(codes[1]); err != nil {
		t.Fatal(err)
	}

	testenv.Await(t, 30*time.Second, 50*time.Millisecond, func() error {
		for _, want := range acme.Orders() {
			got, err := st.Program.DB().FindOrderByCode(ctx, "acme", want.OrderCode)
			if err != nil {
				return fmt.Errorf("acme order %s not mirrored: %v", want.OrderCode, err)
			}
			if diffs := ordersync.DiffOrders(&want, &got.Order); len(diffs) != 0 {
				return fmt.Errorf("acme order %s not mirrored: %v", want.OrderCode, diffs)
			}
		}
		return nil
	})
	if _, err := st.Program.DB().FindOrderByCode(ctx, ordersync.DefaultAccount, codes[2]); err != nil {
		t.Errorf("the default account's order: %v", err)
	}
	if n := st.Sim.Stats().Checkouts; n != 1 {
		t.Errorf("the default service created %d links, want 1", n)
	}
	// The account's metrics carry its name.
	if got := counterValue(st.Program.Registry(), "ordersync_fetch_requests_total", "account", "acme"); got < 2 {
		t.Errorf("ordersync_fetch_requests_total{account=\"acme\"} = %v, want ≥ 2", got)
	}
	if got := counterValue(st.Program.Registry(), "ordersync_webhook_requests_total", "account", "acme"); got < 3 {
		t.Errorf("ordersync_webhook_requests_total{account=\"acme\"} = %v, want ≥ 3 (created, paid, cancelled)", got)
	}
	// The commit stage is the process's, not the default account's: the
	// status changes acme's webhooks brought are counted under acme. The
	// counters move just after the commit the mirror shows, so wait for
	// them.
	for status, want := range map[ordersync.Status]map[string]float64{
		ordersync.StatusPaid:      {"acme": 1, ordersync.DefaultAccount: 0},
		ordersync.StatusCancelled: {"acme": 1, ordersync.DefaultAccount: 0},
	} {
		changes := func(account string) float64 {
			return seriesValue(st.Program.Registry(), "ordersync_mirror_status_changes_total", map[string]string{"account": account, "status": string(status)})
		}
		testenv.WaitFor(t, 30*time.Second, "acme's status changes counted", func() bool {
			return changes("acme") >= want["acme"]
		})
		for account, n := range want {
			if got := changes(account); got != n {
				t.Errorf("ordersync_mirror_status_changes_total{account=%q,status=%q} = %v, want %v", account, status, got, n)
			}
		}
	}

	// An account the deployment does not serve: every path that routes
	// to an account refuses it with the same error, naming it.
	_, unknown := ordersync.Accounts[int](nil).For("ghost")
	for path, body := range map[string]string{
		"/v1/payment-links?account=ghost":       `{"amount":"1.00"}`,
		"/v1/orders/track?account=ghost":        `{"orderCode":"` + codes[0] + `"}`,
		"/v1/dead-letters/replay?account=ghost": ``,
	} {
		resp, err := http.Post(st.Program.AdminURL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var p api.Problem
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusNotFound || !strings.HasSuffix(p.Title, ": "+unknown.Error()) {
			t.Errorf("POST %s: %d %q (%v), want 404 ending in %q", path, resp.StatusCode, p.Title, err, unknown)
		}
	}
	db := "--database-url=" + st.Program.Config().DatabaseURL
	if out, err := runCLI(t, "orders", "track", codes[0], "--account", "ghost", db, "--api-base-url="+st.SimURL, "--secret-key="+st.SecretKey); err == nil || !strings.Contains(err.Error(), unknown.Error()) {
		t.Errorf("orders track --account ghost: %v\n%s; want %q", err, out, unknown)
	}
}

// seriesValue sums a counter family's series that carry every label of
// labels.
func seriesValue(g prometheus.Gatherer, name string, labels map[string]string) float64 {
	sum := 0.0
series:
	for _, m := range family(g, name) {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue series
			}
		}
		sum += m.GetCounter().GetValue()
	}
	return sum
}
