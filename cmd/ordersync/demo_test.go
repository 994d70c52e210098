package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestDemo runs a small demo: two stores (USD in America/El_Salvador, EUR
// in Europe/Madrid), each with orders paid, finalized, reversed and
// cancelled; the mirror matches both simulators, each PAID trigger fires
// once, the demo's verifying endpoint receives an order.paid for each of
// them, each once, signed, with every order's status changes in order, and
// each store's daily totals, in its zone and currency, are what its buyers
// paid and kept.
func TestDemo(t *testing.T) {
	t.Parallel()
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
	if len(rep.Daily) != 2 || !rep.DailyMatch || !strings.Contains(out.String(), "daily total (report daily)  ") {
		t.Errorf("the daily totals %+v do not match what the buyers paid:\n%s", rep.Daily, out.String())
	}
	want := []struct{ account, currency, zone, phone string }{
		{ordersync.DefaultAccount, "USD", "America/El_Salvador", "+503"},
		{demoSecondStore, "EUR", "Europe/Madrid", "+34"},
	}
	if len(rep.Stores) != len(want) {
		t.Fatalf("stores %+v, want %d", rep.Stores, len(want))
	}
	for i, w := range want {
		s, d := rep.Stores[i], rep.Daily[i]
		if s.Account != w.account || s.Store.CurrencyCode != w.currency || s.Store.Timezone != w.zone || s.Orders != 30 {
			t.Errorf("store %d: %+v, want %s in %s, %s, 30 orders", i, s, w.account, w.currency, w.zone)
		}
		if s.Acts.Paid == 0 || s.Acts.Cancelled == 0 {
			t.Errorf("store %s: buyers %+v: want paid and cancelled orders", w.account, s.Acts)
		}
		if d.Account != w.account || d.Currency != w.currency || d.Paid == 0 || !strings.HasPrefix(d.Zone, w.zone+" (UTC") {
			t.Errorf("daily total %d: %+v, want %s's %s in %s", i, d, w.account, w.currency, w.zone)
		}
		for _, line := range []string{"store " + w.account + " ", "daily total (report daily)  " + w.account + " " + w.currency + " "} {
			if !strings.Contains(out.String(), line) {
				t.Errorf("the summary lacks %q:\n%s", line, out.String())
			}
		}
		if !strings.Contains(out.String(), w.phone+" phones") {
			t.Errorf("the summary does not say store %s's buyers have %s phones:\n%s", w.account, w.phone, out.String())
		}
	}
	if !strings.Contains(out.String(), "delivered over HTTP         order.paid for ") {
		t.Errorf("the report lacks the HTTP deliveries:\n%s", out.String())
	}
}
