package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestDemo runs a small demo: the mirror matches the simulator, each PAID
// trigger fires once, and the demo's verifying endpoint receives an
// order.paid for each of them, each once, signed, with every order's status
// changes in order.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), &out, demoOptions{Orders: 60, Seed: 7, Timeout: 45 * time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !rep.OK() || !strings.Contains(out.String(), "ordersync demo: OK") {
		t.Fatalf("the demo failed:\n%s", out.String())
	}
	h := rep.HTTP
	if rep.PaidTriggers == 0 || h.Paid != rep.PaidTriggers || h.PaidWanted != rep.PaidTriggers || h.Changes < rep.Orders {
		t.Errorf("HTTP deliveries %+v for %d PAID triggers and %d orders", h, rep.PaidTriggers, rep.Orders)
	}
	if len(rep.Daily) == 0 || !rep.DailyMatch || rep.Daily[0].Paid == 0 || !strings.Contains(out.String(), "daily total (report daily)  ") {
		t.Errorf("the daily totals %+v do not match what the buyers paid:\n%s", rep.Daily, out.String())
	}
	if !strings.Contains(out.String(), "delivered over HTTP         order.paid for ") {
		t.Errorf("the report lacks the HTTP deliveries:\n%s", out.String())
	}
}
