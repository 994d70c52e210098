package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/store"
)

// overviewRows writes to db what the overview counts, as of now: two
// webhooks mirrored 3 s after their receipt a minute ago, an order heard
// of and not fetched, dead letters, an endpoint whose last delivery
// failed.
func overviewRows(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for i, code := range []string{"ov1", "ov2"} {
		doc := fmt.Sprintf(`{"orderId":"%d","orderCode":%q,"orderStatus":"PENDING","total":1.5,"store":{"currencyCode":"USD"},"created":"2026-10-10T12:00:00.000Z"}`, 7000+i, code)
		o, err := ordersync.DecodeOrder([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		seq, err := db.AllocateFetchSeq(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		received := now.Add(-time.Minute)
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: ordersync.DefaultAccount, Order: o, Seq: seq,
			FetchedAt: received.Add(3 * time.Second), Cause: ordersync.CauseWebhook,
			Events: []ordersync.EventRecord{{MsgID: "m-" + code, Account: ordersync.DefaultAccount, ReceivedAt: received,
				Type: ordersync.EventCreated, OrderCode: code}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "waiting1"}); err != nil {
		t.Fatal(err)
	}
	addDeadLetters(t, db, now.Add(-time.Hour), 2)
	if _, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "fulfil", URL: "https://fulfil.example/hook",
		Events: ordersync.HookEvents, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{{WebhookID: "w-1", EndpointID: "fulfil", Event: ordersync.HookOrderPaid,
		Account: ordersync.DefaultAccount, OrderCode: "ov1", Outcome: ordersync.DeliveryDeadLettered, Attempts: 8, Status: 503,
		Detail: "unavailable", At: now.Add(-5 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
}

// addDeadLetters adds n malformed dead letters created at at (their event
// log rows then too).
func addDeadLetters(t *testing.T, db *store.DB, at time.Time, n int) {
	t.Helper()
	for range n {
		if _, err := db.AddDeadLetter(context.Background(), ordersync.DeadLetter{MsgID: fmt.Sprint("dl-", time.Now().UnixNano()),
			Account: ordersync.DefaultAccount, Reason: ordersync.ReasonMalformed, Attempts: 1, LastError: "bad",
			Body: []byte(`{}`), CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsoleOverview: the home shows the mirror's figures to a viewer,
// and /console/overview.json, by the session, the same figures as the
// rows inserted say; a dead letter added since shows on the next read.
func TestConsoleOverview(t *testing.T) {
	db := openTestDB(t)
	now := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
	overviewRows(t, db, now)
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) {
		c.Overview, c.Clock = db, func() time.Time { return now }
	})
	b := newBrowser(t, base)
	b.signIn("eve-token")

	resp, page := b.do("GET", "/console/", nil)
	if resp.StatusCode != http.StatusOK || len(page) > 100<<10 {
		t.Fatalf("home: %d, %d bytes\n%s", resp.StatusCode, len(page), page)
	}
	for _, want := range []string{"<h1>Console</h1>", `data-figure="webhooks-rate">0.4<`, `data-figure="mirrored-rate">0.4<`,
		`data-figure="lag">median 3s, at most 3s (2 webhooks)<`, `data-figure="waiting">1<`, `data-figure="dead-letters">2<`,
		`<td>malformed</td><td class="num">2</td>`, "<td>fulfil</td>", "<td>failing: 0% delivered</td>", "HTTP 503: unavailable",
		`<script src="/console/static/overview.js" defer></script>`, "last 5 minutes, divided by 5"} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %s", want)
		}
	}
	if strings.Contains(page, "style=") || strings.Contains(page, "<script>") {
		t.Error("inline script or style")
	}
	if resp, _ := b.do("GET", "/console/static/overview.js", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("overview.js: %d", resp.StatusCode)
	}

	var got admin.OverviewView
	read := func() {
		t.Helper()
		resp, body := b.do("GET", "/console/overview.json", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("overview.json: %d %s", resp.StatusCode, body)
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
	}
	read()
	pending, err := db.PendingOutbox(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got.Webhooks != 2 || got.Mirrored != 2 || got.LagSamples != 2 || got.LagMedianMs != 3000 || got.Waiting != 1 ||
		got.Unsent != len(pending) || got.WindowMinutes != 5 || got.Text["dead-letters"] != "2" ||
		fmt.Sprint(got.Tables["dead-letters"]) != "[[malformed 2]]" || len(got.Tables["endpoints"]) != 1 || got.Tables["endpoints"][0][4] != "1" {
		t.Errorf("overview.json %+v", got)
	}
	addDeadLetters(t, db, now.Add(-time.Hour), 1)
	read()
	if got.Text["dead-letters"] != "3" {
		t.Errorf("after another dead letter: %q", got.Text["dead-letters"])
	}
	if resp, _ := newBrowser(t, base).do("GET", "/console/overview.json", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("overview.json without a session: %d, want 303 to sign in", resp.StatusCode)
	}
}
