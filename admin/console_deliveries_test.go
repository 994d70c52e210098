package admin_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

var timelineItem = regexp.MustCompile(`(?s)<li><time datetime="([^"]+)"[^>]*>.*?</time> <strong>([^<]+)</strong> <span class="hint">([^<]*)</span></li>`)

// TestTimelineShowsEachFailedDelivery: on the office data set, a paid
// order whose delivery to the fulfilment endpoint failed (the dispatcher
// gave up after 83 attempts), failed again when replayed, then arrived
// shows each of the three ends in its timeline, newest first, each with
// its time, endpoint and answer.
func TestTimelineShowsEachFailedDelivery(t *testing.T) {
	t.Parallel()
	a, _ := officeEnv(t)
	ep := a.endpoint.ID
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	end := func(outcome ordersync.DeliveryOutcome, attempts, status int, detail string, after time.Duration) ordersync.DeliveryRecord {
		return ordersync.DeliveryRecord{WebhookID: "msg_call_paid", EndpointID: ep, Event: ordersync.HookOrderPaid,
			Account: ordersync.DefaultAccount, OrderCode: officeCall.Code, Outcome: outcome, Attempts: attempts, Status: status,
			Detail: detail, At: at.Add(after)}
	}
	for _, r := range []ordersync.DeliveryRecord{
		end(ordersync.DeliveryDeadLettered, 83, 503, "warehouse busy", 0),
		end(ordersync.DeliveryDeadLettered, 1, 500, "warehouse down", 30*time.Minute),
		end(ordersync.DeliveryDelivered, 1, 200, "replay of delivery dead letter 1", time.Hour),
	} {
		if err := a.db.RecordDeliveries(context.Background(), []ordersync.DeliveryRecord{r}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, a.url)
	b.signIn("eve-token")
	_, page := b.do("GET", "/console/orders/"+officeCall.Code, nil)
	var got []string
	for _, m := range timelineItem.FindAllStringSubmatch(page, -1) {
		if strings.HasPrefix(m[2], "Delivery") {
			got = append(got, m[1]+" "+m[2]+": "+m[3])
		}
	}
	want := []string{
		"2026-11-26T19:00:00Z Delivery order.paid: endpoint " + ep + ": delivered after 1 attempt(s), last HTTP status 200 replay of delivery dead letter 1",
		"2026-11-26T18:30:00Z Delivery order.paid failed: endpoint " + ep + ": dead_lettered after 1 attempt(s), last HTTP status 500 warehouse down",
		"2026-11-26T18:00:00Z Delivery order.paid failed: endpoint " + ep + ": dead_lettered after 83 attempt(s), last HTTP status 503 warehouse busy",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the timeline's deliveries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
