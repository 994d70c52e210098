package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/sim"
)

// TestDemoOverviewInBrowser runs the demo's two stores (the default
// account's USD store in America/El_Salvador, madrid's EUR store in
// Europe/Madrid, each with its own simulator), has buyers pay, finalize,
// reverse and cancel, and opens the console's Overview in chromium: it
// opens with each store's collected money, and today's figure of each
// store opens an Orders page counting as many orders as the figure says.
// The screenshot of the Overview is this page.
func TestDemoOverviewInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	ctx := context.Background()
	st, err := app.StartStack(ctx, app.StackOptions{DataDir: t.TempDir(), Seed: 5,
		Stores: []app.StackStore{{Account: "madrid", Store: sim.MadridStore}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	adminURL := st.Program.AdminURL()
	rng := rand.New(rand.NewPCG(5, 5))
	for _, account := range []string{ordersync.DefaultAccount, "madrid"} {
		var codes []string
		for i := range 24 {
			body, _ := json.Marshal(map[string]any{"amount": fmt.Sprintf("%d.%02d", 5+rng.IntN(90), rng.IntN(100)),
				"orderReference": fmt.Sprintf("%s-%02d", account, i)})
			resp, err := http.Post(adminURL+"/v1/payment-links?account="+account, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var res ordersync.PaymentLinkResult
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("create a link of %s: %d %v", account, resp.StatusCode, err)
			}
			codes = append(codes, res.OrderCode)
		}
		st.Sims[account].ActAsBuyers(codes, rng)
	}
	// Wait until the mirror holds every order as its simulator has it:
	// each webhook's commit wakes a check, from the first order not
	// mirrored yet.
	deadline := time.After(30 * time.Second)
	type pending struct {
		account string
		want    ordersync.Order
	}
	var orders []pending
	for account, sv := range st.Sims {
		for _, want := range sv.Orders() {
			orders = append(orders, pending{account, want})
		}
	}
	for len(orders) > 0 {
		changed := st.Program.MirrorChanged()
		for len(orders) > 0 {
			got, err := st.Program.DB().FindOrderByCode(ctx, orders[0].account, orders[0].want.OrderCode)
			if err != nil || len(ordersync.DiffOrders(&orders[0].want, &got.Order)) != 0 {
				break
			}
			orders = orders[1:]
		}
		if len(orders) == 0 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("order %s of %s not mirrored", orders[0].want.OrderCode, orders[0].account)
		}
	}

	h.load("open the Overview", chromedp.Navigate(adminURL+"/console/"))
	figure := regexp.MustCompile(`^([0-9]+\.[0-9]{2})\s+([0-9]+) orders$`)
	for _, s := range []struct{ account, currency, zone string }{
		{ordersync.DefaultAccount, "USD", "America/El_Salvador (UTC−06:00)"},
		{"madrid", "EUR", "Europe/Madrid (UTC+01:00)"},
	} {
		sel := fmt.Sprintf(`section.money[data-store=%q]`, s.account)
		if zone := h.text(sel + " .zone"); zone != s.zone {
			t.Errorf("store %s's days: %q, want %s", s.account, zone, s.zone)
		}
		link := sel + fmt.Sprintf(` tr[data-currency=%q] a[data-day="today"]`, s.currency)
		m := figure.FindStringSubmatch(strings.TrimSpace(h.text(link)))
		if m == nil || m[2] == "0" {
			t.Fatalf("store %s's collected today: %q, want a total and a count", s.account, h.text(link))
		}
		h.load("open "+s.account+"'s orders collected today", chromedp.Click(chromedp.CSS(link)))
		if got := h.text("#total"); got != m[2] {
			t.Errorf("store %s: the figure counts %s orders, its Orders page %s", s.account, m[2], got)
		}
		rows, err := chromedp.Run(h.ctx, chromedp.Evaluate[int](`document.querySelectorAll("table tbody tr").length`))
		if n, _ := strconv.Atoi(m[2]); err != nil || rows != n {
			t.Errorf("store %s: %d rows on the Orders page (%v), want %s", s.account, rows, err, m[2])
		}
		h.load("back to the Overview", chromedp.Navigate(adminURL+"/console/"))
	}
	h.check()
	h.shot("overview")
}
