package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
)

const (
	alertRulesFile = "../../configs/prometheus/ordersync.rules.yml"
	alertTestsFile = "../../configs/prometheus/ordersync.rules.test.yml"
	dashboardFile  = "../../configs/grafana/ordersync-dashboard.json"
)

// absentUntilEvent are the families the rules and the dashboard reference
// that a healthy service does not export until the event they count first
// happens: CounterVecs whose label values are only created on use. Each
// must still be registered; the test proves that through the registry.
// The worker creates every dead-letter reason and drift kind at start; the
// deliveries' families are per endpoint, and the test runs none.
var absentUntilEvent = map[string]string{
	"ordersync_delivery_events_total":                   "per endpoint",
	"ordersync_delivery_attempts_total":                 "per endpoint",
	"ordersync_delivery_lag_seconds":                    "per endpoint",
	"ordersync_delivery_attempt_duration_seconds":       "per endpoint",
	"ordersync_delivery_oldest_undelivered_age_seconds": "per endpoint",
	"ordersync_delivery_endpoint_disabled":              "per endpoint",
}

var metricNameRE = regexp.MustCompile(`\bordersync_[a-z0-9_]+`)

// TestMonitoringMetricNamesExported runs the whole service, lets one order
// be created and paid, scrapes /metrics over HTTP and checks that every
// metric name the alerting rules and the Grafana dashboard reference is
// exported under that name: a renamed collector would otherwise leave an
// alert that never fires and a panel that is always empty.
func TestMonitoringMetricNamesExported(t *testing.T) {
	t.Parallel()
	refs := map[string][]string{} // metric name -> where it is referenced
	for name, where := range ruleMetricNames(t) {
		refs[name] = append(refs[name], where...)
	}
	for name, where := range dashboardMetricNames(t) {
		refs[name] = append(refs[name], where...)
	}
	if len(refs) < 10 {
		t.Fatalf("found only %d metric names in the rules and the dashboard: is the parsing broken? %v", len(refs), refs)
	}

	st := startTestStack(t, app.StackOptions{Seed: 11})
	ctx := context.Background()
	codes, err := createDemoOrders(ctx, st.Program.AdminURL(), ordersync.DefaultAccount, 3, rand.New(rand.NewPCG(11, 11)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sim.Pay(codes[0], ordersync.Buyer{Name: "Buyer", Email: "buyer@example.com", Phone: "+50370000000"}); err != nil {
		t.Fatalf("pay %s: %v", codes[0], err)
	}
	waitMirrorMatches(t, st, 10*time.Second)
	families := waitScrape(t, st.Program.AdminURL()+"/metrics", func(f map[string]*dto.MetricFamily) bool {
		_, paid := f["ordersync_outbox_published_total"]
		return paid
	}, 5*time.Second)

	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		family, ok := exportedFamily(families, name)
		_, allowed := absentUntilEvent[family]
		switch {
		case ok:
		case allowed:
			assertRegistered(t, st.Program.Registry(), family)
		default:
			t.Errorf("%s, referenced by %s, is not exported", name, strings.Join(refs[name], ", "))
		}
	}
	for family := range absentUntilEvent {
		_, ok := refs[family]
		if _, bucket := refs[family+"_bucket"]; !ok && !bucket {
			t.Errorf("absentUntilEvent lists %s, which neither the rules nor the dashboard reference", family)
		}
	}
}

// TestAlertRulesAnnotated checks that every alert tells the operator how bad
// it is and what to check.
func TestAlertRulesAnnotated(t *testing.T) {
	rules := readAlertRules(t)
	if len(rules) == 0 {
		t.Fatal("no alerting rules")
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Record != "" {
			continue
		}
		if seen[r.Alert] {
			t.Errorf("alert %s defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s has no %s annotation", r.Alert, a)
			}
		}
	}
}

// TestAlertRulesEachTested checks that the promtool unit tests (run by
// .ci/run) make every alert fire at least once: a rule without a firing
// case can be one that never fires.
func TestAlertRulesEachTested(t *testing.T) {
	b, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				AlertName string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", alertTestsFile, err)
	}
	if !slices.Contains(doc.RuleFiles, "ordersync.rules.yml") {
		t.Errorf("%s tests %v, not ordersync.rules.yml", alertTestsFile, doc.RuleFiles)
	}
	fires := map[string]bool{}
	for _, tc := range doc.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.AlertName] = fires[a.AlertName] || len(a.ExpAlerts) > 0
		}
	}
	for _, r := range readAlertRules(t) {
		if r.Alert != "" && !fires[r.Alert] {
			t.Errorf("alert %s: no promtool test in %s expects it to fire", r.Alert, alertTestsFile)
		}
	}
}

// TestDashboardShowsAlertMetrics checks that the dashboard has a panel for
// every metric an alert's expression or description names, so the operator
// an alert sends there finds it; and that its bar panels count over a fixed
// window, so a bar's height does not change with the zoom.
func TestDashboardShowsAlertMetrics(t *testing.T) {
	onDashboard := map[string]bool{}
	for name := range dashboardMetricNames(t) {
		onDashboard[name] = true
		if base, ok := strings.CutSuffix(name, "_bucket"); ok {
			onDashboard[base] = true
		}
	}
	for name, where := range ruleMetricNames(t) {
		base, _ := strings.CutSuffix(name, "_bucket")
		if !onDashboard[name] && !onDashboard[base] {
			t.Errorf("%s, named by %s, has no panel on the dashboard", name, strings.Join(slices.Compact(where), ", "))
		}
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Panels []struct {
			Title       string `json:"title"`
			FieldConfig struct {
				Defaults struct {
					Custom struct {
						DrawStyle string `json:"drawStyle"`
					} `json:"custom"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Panels {
		if p.FieldConfig.Defaults.Custom.DrawStyle != "bars" {
			continue
		}
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "$__") {
				t.Errorf("bar panel %q counts over a window that follows the zoom: %s", p.Title, tg.Expr)
			}
		}
	}
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readAlertRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", alertRulesFile, err)
	}
	var rules []alertRule
	for _, g := range doc.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// ruleMetricNames returns the metric names in the rules' expressions and
// annotations (which name metrics for the operator to look at).
func ruleMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	names := map[string][]string{}
	for _, r := range readAlertRules(t) {
		texts := []string{r.Expr}
		for _, a := range r.Annotations {
			texts = append(texts, a)
		}
		for _, text := range texts {
			for _, name := range metricNameRE.FindAllString(text, -1) {
				names[name] = append(names[name], "alert "+r.Alert+r.Record)
			}
		}
	}
	return names
}

// dashboardMetricNames returns the metric names in every query of the
// dashboard: panel targets and template variables, at any depth.
func dashboardMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", dashboardFile, err)
	}
	names := map[string][]string{}
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				where = "panel " + title
			} else if name, ok := v["name"].(string); ok {
				where = "variable " + name
			}
			for k, child := range v {
				if s, ok := child.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					for _, name := range metricNameRE.FindAllString(s, -1) {
						names[name] = append(names[name], "dashboard "+where)
					}
					continue
				}
				walk(child, where)
			}
		case []any:
			for _, child := range v {
				walk(child, where)
			}
		}
	}
	walk(doc, "")
	return names
}

// exportedFamily reports the family name references to name, and whether
// that family was scraped; name may be a histogram's or summary's series
// (_bucket, _sum, _count).
func exportedFamily(families map[string]*dto.MetricFamily, name string) (string, bool) {
	if _, ok := families[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		if !found {
			continue
		}
		if f, ok := families[base]; ok {
			typ := f.GetType()
			return base, typ == dto.MetricType_HISTOGRAM || typ == dto.MetricType_SUMMARY
		}
		return base, false
	}
	return name, false
}

// waitScrape scrapes url until ready accepts the families or timeout
// passes, and returns the last scrape.
func waitScrape(t *testing.T, url string, ready func(map[string]*dto.MetricFamily) bool, timeout time.Duration) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		families := scrape(t, url)
		if ready(families) || time.Now().After(deadline) {
			return families
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return families
}

// assertRegistered proves a family not exported yet is registered: a
// registry refuses a valid description under a name already registered with
// other labels or help, and accepts it under an unknown one.
func assertRegistered(t *testing.T, reg *prometheus.Registry, name string) {
	t.Helper()
	desc := prometheus.NewDesc(name, "probe of the metric names test", nil, nil)
	if err := desc.Err(); err != nil {
		t.Fatalf("probe %s: %v", name, err)
	}
	probe := descCollector{desc}
	if err := reg.Register(probe); err == nil {
		reg.Unregister(probe)
		t.Errorf("%s is neither exported nor registered", name)
	}
}

type descCollector struct{ desc *prometheus.Desc }

func (c descCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c descCollector) Collect(chan<- prometheus.Metric)    {}
