package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/fulfilment"
	"github.com/ordersync/ordersync/sim"
)

// testFor is every rule's `for` in the test-only copy of the rules: the
// faults below last seconds, not the minutes the real rules wait.
const testFor = "2s"

// TestAlertsAgainstPrometheus runs the service under a real Prometheus
// (Debian's, as CI installs it) that scrapes it every second with a copy of
// the project's rules whose `for` durations are shortened, and drives the
// faults the alerts name: each alert reaches pending or firing in its fault
// and no alert is active while the service is healthy. At the end every
// dashboard query returns data. Set ORDERSYNC_TEST_PROMETHEUS=1 to run it.
func TestAlertsAgainstPrometheus(t *testing.T) {
	if os.Getenv("ORDERSYNC_TEST_PROMETHEUS") == "" {
		t.Skip("ORDERSYNC_TEST_PROMETHEUS is not set: the test against a real Prometheus is skipped")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("ORDERSYNC_TEST_PROMETHEUS is set but there is no prometheus binary: %v", err)
	}
	ctx := context.Background()
	rules := testRules(t)

	t.Run("faults", func(t *testing.T) {
		st := startTestStack(t, app.StackOptions{Seed: 21})
		prom := startPrometheus(t, bin, rules, st.Program.AdminURL())
		client := &admin.Client{BaseURL: st.Program.AdminURL()}

		hook, err := fulfilment.Start(fulfilment.Faults{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hook.Close() })
		if err := hook.Register(ctx, client, "healthy"); err != nil {
			t.Fatal(err)
		}
		codes, err := createDemoOrders(ctx, st.Program.AdminURL(), ordersync.DefaultAccount, 40, rand.New(rand.NewPCG(21, 21)))
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		// touch makes the simulator change one more order, which sends
		// a webhook, which makes a worker fetch the order.
		touch := func() {
			t.Helper()
			if next == len(codes) {
				t.Fatal("out of orders to change")
			}
			if _, err := st.Sim.Pay(codes[next], ordersync.Buyer{Name: "Buyer", Email: "buyer@example.com"}); err != nil {
				t.Fatal(err)
			}
			next++
		}
		touch()
		touch()
		waitMirrorMatches(t, st, 10*time.Second)
		prom.waitScrapes(t, 5)
		if active := prom.activeAlerts(t); len(active) > 0 {
			t.Fatalf("alerts active while the service is healthy: %v", active)
		}

		// An upstream outage: every request fails, the breaker opens.
		// breaker waits until the breaker is open (1) or closed (0); the
		// events refused meanwhile are redelivered and fetched again, and a
		// new one every few seconds makes sure there is a fetch to try.
		breaker := func(want float64) {
			t.Helper()
			deadline := time.Now().Add(60 * time.Second)
			for i := 0; scrapeValue(t, st.Program.AdminURL(), "ordersync_upstream_breaker_open") != want; i++ {
				if time.Now().After(deadline) {
					t.Fatalf("the breaker's gauge is not %v after 60s", want)
				}
				if i%10 == 0 {
					touch()
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		setFaults(t, st.Sim, sim.Faults{ServerErrorRate: 1})
		breaker(1)
		prom.waitAlert(t, "OrdersyncUpstreamBreakerOpen", "firing", 30*time.Second)
		// The events wait and come back, each refused by the open breaker
		// without a request: as live, the refusals come to outnumber the
		// requests, which must not hide that every request fails. The
		// outage lasts until a share counting refusals as requests would
		// read under 10% while the requests' own failures are over 25%
		// (the healthy phase's successes are still in the 5m window).
		deadline := time.Now().Add(120 * time.Second)
		for i := 0; ; i++ {
			o := scrapeByLabel(t, st.Program.AdminURL(), "ordersync_fetch_requests_total", "outcome")
			failed, requests := o["server"], o["server"]+o["ok"]+o["not_found"]
			if failed > 0.25*requests && failed < 0.1*(requests+o["breaker_open"]) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fetch outcomes after 120s of outage: %v", o)
			}
			if i%10 == 0 {
				touch()
			}
			time.Sleep(500 * time.Millisecond)
		}
		prom.waitAlert(t, "OrdersyncFetchErrorsHigh", "firing", 30*time.Second)
		// It ends: the breaker closes on the next fetch that succeeds and
		// the breaker's alert resolves (one opening is no flap).
		setFaults(t, st.Sim, sim.Faults{})
		breaker(0)
		prom.waitAlert(t, "OrdersyncUpstreamBreakerOpen", "inactive", 30*time.Second)

		// A flapping upstream: down, up, down, up. The breaker is closed at
		// the end, and the alert fires on its openings.
		for range 2 {
			setFaults(t, st.Sim, sim.Faults{ServerErrorRate: 1})
			breaker(1)
			setFaults(t, st.Sim, sim.Faults{})
			breaker(0)
		}
		// Once Prometheus has seen the breaker closed for longer than
		// `for`, the alert holds on the count of openings alone.
		deadline = time.Now().Add(30 * time.Second)
		for prom.query(t, `max_over_time(ordersync_upstream_breaker_open[4s]) == 0 and count_over_time(ordersync_upstream_breaker_open[4s]) >= 3`) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("Prometheus has not seen the breaker closed for 4s")
			}
			time.Sleep(250 * time.Millisecond)
		}
		prom.waitAlert(t, "OrdersyncUpstreamBreakerOpen", "firing", time.Second)

		// 300 webhooks with a bad signature.
		for i := range 300 {
			req, err := http.NewRequest(http.MethodPost, st.Program.WebhookURL(), strings.NewReader(fmt.Sprintf(`{"orderId":"%d","type":"Created"}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-H4B-Hmac-Sha256", "AAAA")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		prom.waitAlert(t, "OrdersyncWebhookSignatureFailures", "firing", 30*time.Second)

		// An endpoint disabled by hand.
		disabled, err := fulfilment.Start(fulfilment.Faults{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { disabled.Close() })
		var ep struct {
			ID string `json:"id"`
		}
		if err := client.Do(ctx, http.MethodPost, "/v1/endpoints", api.EndpointParamsJSON{URL: disabled.URL(),
			Secret: fulfilment.Secret, Events: []string{string(ordersync.HookOrderPaid)}}, &ep); err != nil {
			t.Fatal(err)
		}
		off := true
		if err := client.Do(ctx, http.MethodPatch, "/v1/endpoints/"+ep.ID, api.EndpointUpdateJSON{Disabled: &off}, nil); err != nil {
			t.Fatal(err)
		}
		prom.waitAlert(t, "OrdersyncEndpointDisabled", "firing", 30*time.Second)

		// Every query of the dashboard returns data.
		touch()
		prom.waitScrapes(t, 3)
		for _, q := range dashboardQueries(t) {
			if n := prom.query(t, q); n == 0 {
				t.Errorf("dashboard query returns no data: %s", q)
			}
		}
		for _, v := range []string{"job", "instance"} {
			if values := prom.labelValues(t, v, "ordersync_build_info"); len(values) == 0 {
				t.Errorf("variable %s has no values", v)
			}
		}
	})

	// A fresh start whose webhook secret is not the one the service signs
	// with: orders are created, every webhook is refused.
	t.Run("fresh start, wrong webhook secret", func(t *testing.T) {
		st := startTestStack(t, app.StackOptions{Seed: 22, Configure: func(c *app.Config) {
			c.WebhookSecrets = []string{app.RandomSecret()}
		}})
		prom := startPrometheus(t, bin, rules, st.Program.AdminURL())
		prom.waitScrapes(t, 2)
		if _, err := createDemoOrders(ctx, st.Program.AdminURL(), ordersync.DefaultAccount, 3, rand.New(rand.NewPCG(22, 22))); err != nil {
			t.Fatal(err)
		}
		prom.waitAlert(t, "OrdersyncNoWebhooksAccepted", "firing", 40*time.Second)
		prom.waitAlert(t, "OrdersyncWebhooksOnlyRefused", "firing", 40*time.Second)
	})
}

// testRules writes the project's rules with every `for` set to testFor.
func testRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "for" {
					n.Content[i+1].Value = testFor
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type promServer struct{ url string }

// startPrometheus runs Prometheus on a free loopback port, scraping the
// admin listener at adminURL every second as job ordersync, and evaluating
// rules every second; it is stopped when the test ends.
func startPrometheus(t *testing.T, bin, rules, adminURL string) *promServer {
	t.Helper()
	dir := t.TempDir()
	target := strings.TrimPrefix(adminURL, "http://")
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: ordersync
    static_configs:
      - targets: [%q]
`, rules, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	p := &promServer{url: "http://" + addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30s: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *promServer) get(t *testing.T, path string, params url.Values, out any) {
	t.Helper()
	resp, err := http.Get(p.url + path + "?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if body.Status != "success" {
		t.Fatalf("%s %v: %s", path, params, body.Error)
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// query runs an instant query and returns how many series it returned.
func (p *promServer) query(t *testing.T, expr string) int {
	t.Helper()
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	return len(data.Result)
}

func (p *promServer) labelValues(t *testing.T, label, match string) []string {
	t.Helper()
	var values []string
	p.get(t, "/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &values)
	return values
}

// activeAlerts names the alerts pending or firing, with their state.
func (p *promServer) activeAlerts(t *testing.T) map[string]string {
	t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	p.get(t, "/api/v1/alerts", url.Values{}, &data)
	active := map[string]string{}
	for _, a := range data.Alerts {
		active[a.Labels["alertname"]] = a.State
	}
	return active
}

// waitAlert waits until the alert is in state (inactive: neither pending
// nor firing).
func (p *promServer) waitAlert(t *testing.T, name, state string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		active := p.activeAlerts(t)
		got, ok := active[name]
		if !ok {
			got = "inactive"
		}
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s after %v, want %s; active: %v", name, got, timeout, state, active)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitScrapes waits until Prometheus holds n samples of the target's up.
func (p *promServer) waitScrapes(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.query(t, fmt.Sprintf(`count_over_time(up{job="ordersync"}[1h]) >= %d`, n)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d scrapes in 30s", n)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func setFaults(t *testing.T, s *sim.Server, f sim.Faults) {
	t.Helper()
	if err := s.SetFaults(f); err != nil {
		t.Fatal(err)
	}
}

// scrapeValue is the sum of a family's values on the service's /metrics.
func scrapeValue(t *testing.T, adminURL, name string) float64 {
	t.Helper()
	f, ok := scrape(t, adminURL+"/metrics")[name]
	if !ok {
		t.Fatalf("%s is not exported", name)
	}
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return sum
}

// scrapeByLabel is a family's values on the service's /metrics, summed by
// one label.
func scrapeByLabel(t *testing.T, adminURL, name, label string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range scrape(t, adminURL+"/metrics")[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// dashboardQueries are the dashboard's panel queries with its variables
// filled as Grafana would with every job and instance chosen.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("$job", ".*", "$instance", ".*", "$__rate_interval", "1m")
	var out []string
	for _, p := range doc.Panels {
		for _, tg := range p.Targets {
			out = append(out, fill.Replace(tg.Expr))
		}
	}
	if len(out) < 30 {
		t.Fatalf("only %d dashboard queries", len(out))
	}
	return out
}
