package admin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/sim"
)

// TestDailyTotalsEndpoint pays links through the simulator and reads their
// day's totals back, exactly; and refuses each bad parameter by name.
func TestDailyTotalsEndpoint(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	var codes []string
	for range 3 {
		codes = append(codes, e.createLink(t, `{"amount":0.10}`))
	}
	for _, code := range codes[:2] {
		e.payAndTrack(t, code, sim.DefaultBuyer)
	}
	// The order's JSON says when ordersync learned of the payment.
	status, b := e.do(t, "GET", "/v1/orders/"+codes[0], "")
	var shown struct {
		Sync ordersync.SyncInfo `json:"sync"`
	}
	if err := json.Unmarshal(b, &shown); status != http.StatusOK || err != nil || shown.Sync.PaidAt == nil || shown.Sync.StatusChangedAt == nil {
		t.Fatalf("show: %d %s (%v)", status, b, err)
	}

	// Today in UTC and the day after, whatever the clock says.
	now := time.Now().UTC()
	from := now.Add(-time.Hour).Format("2006-01-02")
	to := now.Add(25 * time.Hour).Format("2006-01-02")
	status, b = e.do(t, "GET", "/v1/reports/daily?tz=UTC&from="+from+"&to="+to, "")
	if status != http.StatusOK {
		t.Fatalf("daily: %d %s", status, b)
	}
	var got ordersync.DailyTotals
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var created, paid int
	var paidTotal, createdTotal []string
	for _, d := range got.Days {
		created += d.Created.Count
		paid += d.Paid.Count
		createdTotal = append(createdTotal, d.Created.Total)
		paidTotal = append(paidTotal, d.Paid.Total)
	}
	// Both payments happened within the hour; a run across midnight may
	// split the orders over two days.
	if got.TZ != "UTC" || created != 3 || paid != 2 {
		t.Fatalf("daily = %s; want 3 created and 2 paid in UTC", b)
	}
	if len(got.Days) == 1 && (createdTotal[0] != "0.30" || paidTotal[0] != "0.20" || got.Days[0].Net != "0.20") {
		t.Errorf("daily = %s; want created 0.30, paid and net 0.20", b)
	}
	if !strings.Contains(string(b), `"total":"0.20"`) && len(got.Days) == 1 {
		t.Errorf("totals are not decimal strings: %s", b)
	}

	for _, tc := range []struct{ query, param string }{
		{"from=2026-03-01&to=2026-03-02&tz=Mars/Olympus", "tz"},
		{"from=2026-03-01&to=2026-03-02&tz=../../etc/passwd", "tz"},
		{"from=2026-03-02&to=2026-03-01", "to"},
		{"from=2026-03-01&to=2026-03-01", "to"},
		{"from=2026-3-1&to=2026-03-02", "from"},
		{"from=2026-03-01&to=tomorrow", "to"},
		{"to=2026-03-02", "from"},
		{"from=2025-01-01&to=2026-03-02", "to"},
	} {
		status, b := e.do(t, "GET", "/v1/reports/daily?"+tc.query, "")
		var p api.Problem
		if err := json.Unmarshal(b, &p); status != http.StatusBadRequest || err != nil || len(p.Errors[tc.param]) == 0 {
			t.Errorf("%s: %d %s; want 400 naming %s", url.PathEscape(tc.query), status, b, tc.param)
		}
	}
}
