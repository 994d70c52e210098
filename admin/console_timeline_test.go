package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

var rawDetails = regexp.MustCompile(`(?s)<details><summary>The document as fetched</summary><pre>(.*?)</pre></details>`)

// TestConsoleOrderTimeline: the Order page's timeline shows each fetch
// that changed the document with the fields it changed, and the PAID
// trigger with when it was published (and, once the outbox has pruned its
// message, that it went out with the fetch that saw the order paid); the
// raw document shows as fetched (its key order and digits), escaped: a
// buyer named <script> is text.
func TestConsoleOrderTimeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestDB(t)
	base := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	doc := func(status, email string) string {
		payment := "null"
		if email != "" {
			payment = `{"authorizationCode":"204981","buyer":{"name":"<script>alert(1)</script>","phone":"","email":"` + email + `"}}`
		}
		return `{"orderId":31,"orderCode":"Tl01","orderReference":"T-1","orderStatus":"` + status + `","subtotal":6.50,"total":6.50,` +
			`"store":{"currencyCode":"USD"},"payment":` + payment + `}`
	}
	for i, d := range []struct {
		doc   string
		cause ordersync.Cause
	}{
		{doc("PENDING", ""), ordersync.CauseCreate},
		{doc("PAID", "ana@example.com"), ordersync.CauseWebhook},
		{doc("PAID", "ana@example.com"), ordersync.CauseReconcile}, // unchanged
		{doc("PAID", "ana@example.org"), ordersync.CauseReconcile},
	} {
		o, err := ordersync.DecodeOrder([]byte(d.doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: ordersync.DefaultAccount, Order: o, Seq: int64(i + 1),
			FetchedAt: base.Add(time.Duration(i) * time.Minute), Cause: d.cause}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := db.PendingOutbox(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Subject == ordersync.SubjectPaid {
			if err := db.MarkOutboxSent(ctx, []int64{m.ID}, base.Add(90*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := newBrowser(t, consoleServer(t, db, roleTokens, nil))
	if resp := b.signIn("eve-token"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	b.do("GET", "/console/zone?zone=utc&back=/console/orders", nil)

	resp, page := b.do("GET", "/console/orders/Tl01", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("order page: %d\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{
		"<strong>Document changed</strong> <span class=\"hint\">Payment.Buyer.Email (fetch caused by reconcile)</span>",
		"<strong>Document changed</strong> <span class=\"hint\">OrderStatus, Payment (fetch caused by webhook)</span>",
		"<strong>PAID trigger</strong> <span class=\"hint\">queued in the outbox; published to the stream 2026-11-20 10:01 UTC</span>",
		"Status PENDING → PAID",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("order page lacks %q:\n%s", want, page)
		}
	}
	if n := strings.Count(page, "<strong>Document changed</strong>"); n != 2 {
		t.Errorf("%d document changes shown, want 2 (the first fetch and the unchanged one record none)", n)
	}
	if strings.Contains(page, "<script>alert") {
		t.Errorf("the buyer's name reached the page unescaped")
	}
	m := rawDetails.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no raw document in a <details>:\n%s", page)
	}
	raw := m[1]
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "ana@example.org", "&#34;subtotal&#34;: 6.50", "\n  &#34;orderId&#34;: 31,\n  &#34;orderCode&#34;"} {
		if !strings.Contains(raw, want) {
			t.Errorf("raw document lacks %q:\n%s", want, raw)
		}
	}

	// Once the outbox has pruned the published trigger, the timeline still
	// shows it, at the fetch that first saw the order paid.
	if n, err := db.PruneSentOutbox(ctx, base.Add(time.Hour), 10); err != nil || n == 0 {
		t.Fatalf("PruneSentOutbox = %d, %v", n, err)
	}
	_, page = b.do("GET", "/console/orders/Tl01", nil)
	want := fmt.Sprintf(`<li><time datetime="%s" title="2026-11-20 10:01:00 UTC">2026-11-20 10:01 UTC</time> <strong>PAID trigger</strong> <span class="hint">queued by this fetch and published; the outbox no longer keeps the message</span></li>`,
		base.Add(time.Minute).Format(time.RFC3339))
	if !strings.Contains(page, want) {
		t.Errorf("order page after the outbox was pruned lacks %q:\n%s", want, page)
	}
}
