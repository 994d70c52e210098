package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// TestAccountsMetricsCarryTheirAccount: with two accounts, the drift a
// reconcile of the second account finds, and its fetches, are counted
// under its own account label, not under "default".
func TestAccountsMetricsCarryTheirAccount(t *testing.T) {
	// The second account's service sends no webhooks: its payment is
	// found only by a reconcile, as drift.
	acme, acmeURL := startSim(t, sim.Config{SecretKey: "sk_acme", Seed: 11})
	st := startTestStack(t, StackOptions{Configure: func(c *Config) {
		c.Accounts = map[string]AccountConfig{"acme": {APIBaseURL: acmeURL, SecretKey: "sk_acme", WebhookSecrets: []string{"whsec_acme"}}}
	}})
	ctx := context.Background()
	codes := map[string]string{}
	for _, account := range []string{"acme", ordersync.DefaultAccount} {
		body, _ := json.Marshal(map[string]any{"amount": "12.50", "orderReference": "r-" + account})
		resp, err := http.Post(st.Program.AdminURL()+"/v1/payment-links?account="+account, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var res ordersync.PaymentLinkResult
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("create a link for %s: %d %v", account, resp.StatusCode, err)
		}
		codes[account] = res.OrderCode
	}
	// The admin API follows a link it created: wait until the mirror has it.
	testenv.Await(t, 20*time.Second, 20*time.Millisecond, func() error {
		for account, code := range codes {
			if _, err := st.Program.DB().FindOrderByCode(ctx, account, code); err != nil {
				return fmt.Errorf("%s order %s not mirrored: %v", account, code, err)
			}
		}
		return nil
	})
	if _, err := acme.Pay(codes["acme"], ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	fetchesBefore := map[string]float64{}
	for account := range codes {
		fetchesBefore[account] = labelledValue(t, st.Program.Registry(), "ordersync_fetch_requests_total", map[string]string{"account": account})
	}
	// Each account's reconciler checks its own orders once.
	for _, rec := range st.Program.reconcilers {
		if _, err := rec.RunOnce(ctx, ordersync.ReconcileFilter{}, nil); err != nil {
			t.Fatalf("RunOnce: %v", err)
		}
	}
	drift := func(account string) float64 {
		return labelledValue(t, st.Program.Registry(), "ordersync_drift_total", map[string]string{"account": account, "kind": "missed_webhook"})
	}
	if got := drift("acme"); got != 1 {
		t.Errorf(`ordersync_drift_total{account="acme",kind="missed_webhook"} = %v, want 1: the payment no webhook announced`, got)
	}
	if got := drift(ordersync.DefaultAccount); got != 0 {
		t.Errorf(`ordersync_drift_total{account="default",kind="missed_webhook"} = %v, want 0: the default account's order did not change`, got)
	}
	for account := range codes {
		after := labelledValue(t, st.Program.Registry(), "ordersync_fetch_requests_total", map[string]string{"account": account})
		if after < fetchesBefore[account]+1 {
			t.Errorf(`ordersync_fetch_requests_total{account=%q} went from %v to %v, want its own check counted`, account, fetchesBefore[account], after)
		}
	}
}

// labelledValue sums the counters of name whose labels include labels.
func labelledValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
