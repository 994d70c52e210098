package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// sharedStateGauges are reported alike by every process of a deployment:
// they read the one shared consumer, mirror or outbox.
var sharedStateGauges = []string{
	"ordersync_consumer_pending_messages",
	"ordersync_mirror_orders",
	"ordersync_outbox_oldest_unsent_age_seconds",
}

// TestSharedStateNotSummed: no alert and no dashboard query adds up a
// shared-state gauge across processes, which would count the same backlog
// once per worker process; per process (by instance) is fine.
func TestSharedStateNotSummed(t *testing.T) {
	var exprs []string
	for _, r := range readAlertRules(t) {
		exprs = append(exprs, r.Expr)
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if s, ok := child.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	checked := 0
	for _, g := range sharedStateGauges {
		summed := regexp.MustCompile(`sum\s*(?:by\s*\(([^)]*)\))?\s*\(\s*` + g + `\b`)
		for _, e := range exprs {
			for _, m := range summed.FindAllStringSubmatch(e, -1) {
				if !strings.Contains(m[1], "instance") {
					t.Errorf("%q sums %s across processes; every process reports the same value: use max", e, g)
				}
			}
			if strings.Contains(e, g) {
				checked++
			}
		}
	}
	if checked < 4 {
		t.Errorf("only %d expressions use a shared-state gauge: is the parsing broken?", checked)
	}
}
