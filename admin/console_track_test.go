package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestConsoleTrackLetterOrder: an unresolved letter (a webhook whose order
// id the mirror did not know) shows that id, and operators, not viewers,
// get "Track this order": given the code, the order is fetched into the
// mirror and the letter replayed; the letter's page and the list then
// name the order by its code, linked; a missing code or one the service
// does not know is a page that says so; the trail has each.
func TestConsoleTrackLetterOrder(t *testing.T) {
	t.Parallel()
	a := newActionsEnv(t)
	ctx := context.Background()
	amount, err := ordersync.ParseAmount("12.50")
	if err != nil {
		t.Fatal(err)
	}
	link, err := a.sim.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount})
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "m-unresolved", Account: ordersync.DefaultAccount,
		Reason: ordersync.ReasonUnresolved, Attempts: 3, LastError: "no order for id", OrderID: link.OrderID,
		Body: []byte(`{"orderId":"` + string(link.OrderID) + `","orderType":"FASTLINK_CHARGE","type":"Created"}`), CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	letter := fmt.Sprintf("/console/dead-letters/%d", id)

	viewer, _ := signedIn(t, a.url, "eve-token")
	_, page := viewer.do("GET", letter, nil)
	if !strings.Contains(page, "id "+string(link.OrderID)+" (not in the mirror)") || strings.Contains(page, "/track") {
		t.Errorf("a viewer's letter page: want the id and no track form:\n%s", page)
	}

	ops, csrf := signedIn(t, a.url, "ops-token")
	if _, page := ops.do("GET", letter, nil); !strings.Contains(page, `action="`+letter+`/track"`) || !strings.Contains(page, "Track this order") {
		t.Fatalf("an operator's letter page offers no tracking:\n%s", page)
	}
	if resp, page := ops.do("POST", letter+"/track", url.Values{"csrf": {csrf}, "code": {" "}}); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(page, "Order code: type the order") {
		t.Errorf("tracking without a code: %d\n%s", resp.StatusCode, page)
	}
	if resp, page := ops.do("POST", letter+"/track", url.Values{"csrf": {csrf}, "code": {"zzNoSuch"}}); resp.StatusCode != http.StatusNotFound ||
		!strings.Contains(page, "track order zzNoSuch") {
		t.Errorf("tracking an unknown code: %d\n%s", resp.StatusCode, page)
	}
	resp, _ := ops.do("POST", letter+"/track", url.Values{"csrf": {csrf}, "code": {link.OrderCode}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, letter+"?tracked=") {
		t.Fatalf("track: %d to %q", resp.StatusCode, loc)
	}
	_, page = ops.do("GET", loc, nil)
	if !strings.Contains(page, "Order "+link.OrderCode+" tracked") || !strings.Contains(page, "This letter was replayed") ||
		!strings.Contains(page, `<a href="/console/orders/`+link.OrderCode+`">`) {
		t.Errorf("the letter after tracking:\n%s", page)
	}
	if dl, err := a.db.FindDeadLetter(ctx, id); err != nil || dl.ReplayCount != 1 {
		t.Errorf("the letter after tracking: %+v, %v; want replayed once", dl, err)
	}
	if _, err := a.db.FindOrderByCode(ctx, ordersync.DefaultAccount, link.OrderCode); err != nil {
		t.Errorf("the order is not in the mirror after tracking: %v", err)
	}
	if _, page := ops.do("GET", "/console/dead-letters?replayed=true", nil); !strings.Contains(page, `<a href="/console/orders/`+link.OrderCode+`">`+link.OrderCode+`</a>`) {
		t.Errorf("the list does not name the letter's order by its code:\n%s", page)
	}
	trail, err := a.db.ListAudit(ctx, ordersync.AuditFilter{Actor: "ops", Action: "dead-letter.track-order"})
	if err != nil || len(trail.Records) != 3 || trail.Records[0].Object != fmt.Sprintf("dead letter %d: order %s", id, link.OrderCode) ||
		trail.Records[0].Outcome != "ok" {
		t.Errorf("the trail of tracking: %+v, %v", trail.Records, err)
	}
}
