package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync"
)

// absent reports whether nothing on the page matches sel.
func (h *headless) absent(sel string) bool {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	none, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) === null`, sel)))
	if err != nil {
		h.t.Fatalf("look for %s: %v", sel, err)
	}
	return none
}

// TestConsoleActionsInBrowser drives the Dead letters and Endpoints pages
// in chromium: as an operator, replay a dead letter from the list and see
// it leave, replay every letter a filter matches and follow the job to its
// end, send a test event the endpoint receives; as a viewer, find no
// action form on either page. Any error a page reports fails it.
func TestConsoleActionsInBrowser(t *testing.T) {
	t.Parallel()
	h := newHeadless(t)
	a := newActionsEnv(t)
	ctx := context.Background()
	letters := a.addLetters(t, 3, ordersync.ReasonUnresolved, ordersync.DefaultAccount)
	a.addLetters(t, 2, ordersync.ReasonUnknownOrder, ordersync.DefaultAccount)
	var recs []ordersync.DeliveryRecord
	for i := range 20 {
		rec := ordersync.DeliveryRecord{WebhookID: fmt.Sprint("wh-", i), EndpointID: a.endpoint.ID, Event: ordersync.HookOrderPaid,
			Account: ordersync.DefaultAccount, OrderCode: fmt.Sprintf("yY7Mc%02d", i), Outcome: ordersync.DeliveryDelivered,
			Attempts: 1, Status: 200, At: time.Now().Add(-time.Duration(60-i) * time.Minute)}
		if i == 13 {
			rec.Outcome, rec.Status, rec.Attempts, rec.Detail = ordersync.DeliveryDeadLettered, 503, 12, "retry window passed"
		}
		recs = append(recs, rec)
	}
	if err := a.db.RecordDeliveries(ctx, recs); err != nil {
		t.Fatal(err)
	}

	h.signIn(a.url, "ops-token")
	h.load("open Dead letters", chromedp.Click(chromedp.CSS(`nav a[href="/console/dead-letters"]`)))
	if groups := h.text("ul.reasons"); !strings.Contains(groups, "unresolved 3") || !strings.Contains(groups, "unknown_order 2") {
		t.Errorf("the groups by reason read %q", groups)
	}
	h.shot("dead-letters")

	// Replay the newest unresolved letter from the list filtered by reason.
	h.load("filter by reason", chromedp.Click(chromedp.CSS(`ul.reasons a[href*="reason=unresolved"]`)))
	one := letters[2]
	link := fmt.Sprintf(`tbody a[href="/console/dead-letters/%d"]`, one)
	if h.absent(link) {
		t.Fatalf("letter %d is not listed under unresolved", one)
	}
	h.load("replay one", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[aria-label="Replay letter %d"]`, one))))
	if msg := h.text("p.message"); !strings.Contains(msg, fmt.Sprintf("Dead letter %d replayed", one)) {
		t.Errorf("after replaying, the page says %q", msg)
	}
	if !h.absent(link) {
		t.Errorf("letter %d is still listed after its replay", one)
	}
	if dl, err := a.db.FindDeadLetter(ctx, one); err != nil || dl.ReplayCount != 1 {
		t.Errorf("letter %d after the replay: %+v, %v", one, dl, err)
	}
	h.load("open a letter", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tbody a[href="/console/dead-letters/%d"]`, letters[1]))))
	if body := h.text("pre"); !strings.Contains(body, `"orderId": "9001"`) {
		t.Errorf("the letter's body reads %q", body)
	}
	h.shot("dead-letter")

	// Every unresolved letter left, as a job.
	h.load("back to the list", chromedp.Navigate(a.url+"/console/dead-letters?reason=unresolved"))
	h.load("replay every match", chromedp.Click(chromedp.CSS("form.bulk button")))
	if q, n := h.text("h1"), h.text("#confirm-count strong"); q != "Replay 2 dead letter(s)?" || n != "2" {
		t.Errorf("the confirmation asks %q with %q, want 2", q, n)
	}
	h.shot("dead-letters-confirm")
	h.load("confirm the replay", chromedp.Click(chromedp.CSS("button.confirm")))
	var jobID int64
	if _, err := fmt.Sscanf(h.text("h1"), "Replay job %d", &jobID); err != nil {
		t.Fatalf("after starting the job the page is %q", h.text("h1"))
	}
	if _, _, err := a.api.WaitReplayJob(ctx, jobID); err != nil {
		t.Fatal(err)
	}
	h.load("the job's page", chromedp.Navigate(fmt.Sprintf("%s/console/dead-letters/jobs/%d", a.url, jobID)))
	if state, n := h.text("#job-state"), h.text("#job-replayed"); !strings.HasPrefix(state, "Finished") || n != "2" {
		t.Errorf("the job's page says %q with %s replayed, want finished with 2", state, n)
	}
	h.shot("dead-letters-job")

	h.load("open Endpoints", chromedp.Click(chromedp.CSS(`nav a[href="/console/endpoints"]`)))
	if rate := h.text("dd.rate"); !strings.HasPrefix(rate, "95.0 %") {
		t.Errorf("the success rate reads %q", rate)
	}
	h.shot("endpoints")
	h.load("send a test event", chromedp.Click(chromedp.CSS("button.test")))
	if msg := h.text("p.message"); !strings.Contains(msg, "delivered, HTTP 200") || a.received.Load() != 1 {
		t.Errorf("after the test event the page says %q; the endpoint received %d", msg, a.received.Load())
	}
	h.load("a 7-day window", chromedp.SetValue(chromedp.CSS("#window"), "7d"), chromedp.Click(chromedp.CSS("form.filters button")))
	if hint := h.text("#window-hint"); !strings.Contains(hint, "last 7 days") {
		t.Errorf("after choosing 7 days the page says %q", hint)
	}

	// A viewer: the same pages, no action form.
	h.load("home", chromedp.Navigate(a.url+"/console/"))
	h.load("sign out", chromedp.Click(chromedp.CSS("header form button")))
	h.signIn(a.url, "eve-token")
	h.load("Dead letters as viewer", chromedp.Navigate(a.url+"/console/dead-letters"))
	if !h.absent("main form[method=post]") {
		t.Error("a viewer's Dead letters page has an action form")
	}
	h.load("Endpoints as viewer", chromedp.Navigate(a.url+"/console/endpoints"))
	if !h.absent("main form[method=post]") || h.absent("section.endpoint") {
		t.Error("a viewer's Endpoints page has an action form, or no endpoint")
	}
	h.shot("endpoints-viewer")
	h.check()
}
