package admin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestFailedDeliveriesInBrowser drives an endpoint's failed deliveries in
// chromium, on the office data set, against a receiver that answers 500 for two of the orders:
// from the Endpoints page to the list, replay one with its row's button,
// tick two and replay them after a confirmation showing 2, then replay
// every one after a confirmation showing their count, which fail again
// and are marked; a reload of the page after it sends nothing again. The
// endpoint receives each failed event once per replay and nothing that
// was delivered; the Endpoints page and the overview
// count the same failures afterwards. Any error a page reports fails it.
func TestFailedDeliveriesInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	a, ids := officeEnv(t)
	ep := a.endpoint.ID

	h.signIn(a.url, "ops-token")
	h.load("open Endpoints", chromedp.Click(chromedp.CSS(`nav a[href="/console/endpoints"]`)))
	if n := h.text("#failed-" + ep); n != "5 failed" {
		t.Errorf("the Endpoints page says %q, want 5 failed", n)
	}
	h.load("open the failed deliveries", chromedp.Click(chromedp.CSS("#failed-"+ep)))
	if c := h.text("#failed-count"); c != "5 failed deliveries" {
		t.Errorf("the list's count reads %q", c)
	}
	h.shot("failed-deliveries")

	// Each failed delivery is of an order of the data set: its link opens
	// the order, whose timeline shows the failed attempt.
	f0 := officeDeliveries["F0"]
	h.load("open F0's order", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#dl-%d a[href="/console/orders/%s"]`, ids["F0"], f0))))
	if title, body := h.text("h1"), h.text("body"); !strings.Contains(title, f0) || !strings.Contains(body, "Delivery order.paid failed") ||
		!strings.Contains(body, "endpoint "+ep+": dead_lettered after 83 attempt(s), last HTTP status 503 busy") {
		t.Errorf("F0's order page (%q) does not show its failed delivery:\n%s", title, body)
	}
	h.load("back to the failed deliveries", chromedp.Navigate(a.url+"/console/endpoints/"+ep+"/failed"))

	h.load("replay F0", chromedp.Click(chromedp.CSS(fmt.Sprintf("#dl-%d button.replay-one", ids["F0"]))))
	if c, res := h.text("#failed-count"), h.text("#replay-result"); c != "4 failed deliveries" || !strings.Contains(res, "Replayed 1 failed deliveries") ||
		!strings.Contains(res, "1 delivered") {
		t.Errorf("after replaying one: %q, %q", c, res)
	}

	h.do("tick F1 and F2", chromedp.Click(chromedp.CSS(fmt.Sprintf("#pick-%d", ids["F1"]))), chromedp.Click(chromedp.CSS(fmt.Sprintf("#pick-%d", ids["F2"]))))
	h.load("replay the selected", chromedp.Click(chromedp.CSS("button.replay-selected")))
	if q := h.text("h1"); q != "Replay 2 failed deliveries?" {
		t.Fatalf("the confirmation asks %q", q)
	}
	if got := a.receivedByOrder(t); got[officeDeliveries["F1"]] != 0 || got[officeDeliveries["F2"]] != 0 {
		t.Errorf("the confirmation page sent %v", got)
	}
	h.load("confirm 2", chromedp.Click(chromedp.CSS("button.confirm")))
	if c, res := h.text("#failed-count"), h.text("#replay-result"); c != "2 failed deliveries" || !strings.Contains(res, "2 delivered") ||
		!strings.Contains(res, "none failed again") {
		t.Errorf("after replaying the selected: %q, %q", c, res)
	}

	h.load("replay every one", chromedp.Click(chromedp.CSS("button.replay-all")))
	if q, n := h.text("h1"), h.text("#confirm-count strong"); q != "Replay 2 failed deliveries?" || n != "2" {
		t.Fatalf("the confirmation of all asks %q with %q", q, n)
	}
	h.shot("failed-deliveries-confirm")
	h.load("confirm all", chromedp.Click(chromedp.CSS("button.confirm")))
	if c, res := h.text("#failed-count"), h.text("#replay-result"); c != "2 failed deliveries" || !strings.Contains(res, "2 failed again") {
		t.Errorf("after replaying all: %q, %q", c, res)
	}
	if again := h.text(fmt.Sprintf("#dl-%d td.answer", ids["F3"])); again != "failed again: HTTP 500: warehouse down for "+officeDeliveries["F3"] {
		t.Errorf("F3's answer reads %q", again)
	}
	h.do("follow the link to one that failed again", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#replay-result a[href="#dl-%d"]`, ids["F4"]))))
	if hash, err := chromedp.Run(h.ctx, chromedp.Evaluate[string](`location.hash`)); err != nil || hash != fmt.Sprintf("#dl-%d", ids["F4"]) {
		t.Errorf("the link to F4 went to %q (%v)", hash, err)
	}
	h.shot("failed-deliveries-again")
	// A reload of the page the replay led to shows it again and sends nothing:
	// the endpoint's receipts below stay one per failed event.
	h.load("reload after the replay", chromedp.Reload())
	if c, res := h.text("#failed-count"), h.text("#replay-result"); c != "2 failed deliveries" || !strings.Contains(res, "2 failed again") {
		t.Errorf("after a reload: %q, %q", c, res)
	}

	want := map[string]int{}
	for _, f := range []string{"F0", "F1", "F2", "F3", "F4"} {
		want[officeDeliveries[f]] = 1
	}
	if got := a.receivedByOrder(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the endpoint received %v, want %v: each failed event once, nothing delivered", got, want)
	}
	h.load("back to Endpoints", chromedp.Click(chromedp.CSS(`nav a[href="/console/endpoints"]`)))
	if n := h.text("#failed-" + ep); n != "2 failed" {
		t.Errorf("the Endpoints page says %q after the replays, want 2 failed", n)
	}
	if n := a.overviewFailed(t); n != 2 {
		t.Errorf("the overview counts %d failed, the Endpoints page 2", n)
	}
	h.check()
}
