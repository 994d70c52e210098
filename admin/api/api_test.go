package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestNewOrderListNeverNull: an empty page is an empty list, not null,
// and has no next cursor.
func TestNewOrderListNeverNull(t *testing.T) {
	b, err := json.Marshal(NewOrderList(ordersync.OrderPage{Limit: 10}))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"orders":[]`) || !strings.Contains(s, `"nextCursor":null`) || strings.Contains(s, "asOf") {
		t.Errorf("empty page: %s", s)
	}
}

// TestNewEventList merges webhooks and deliveries newest first, at most
// limit of them.
func TestNewEventList(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	events := []ordersync.EventRecord{{MsgID: "b", ReceivedAt: at.Add(2 * time.Second)}, {MsgID: "a", ReceivedAt: at}}
	deliveries := []ordersync.DeliveryRecord{{WebhookID: "d", At: at.Add(time.Second)}}
	l := NewEventList(events, deliveries, 2)
	if len(l.Events) != 2 || l.Events[0].MsgID != "b" || l.Events[0].Kind != EventKindWebhook ||
		l.Events[1].WebhookID != "d" || l.Events[1].Kind != EventKindDelivery {
		t.Errorf("events %+v", l.Events)
	}
	if l := NewEventList(nil, nil, 0); l.Events == nil {
		t.Error("no events: a nil list")
	}
}

// TestDeadLetterJSONOf gives a body that is JSON as JSON, any other as
// text.
func TestDeadLetterJSONOf(t *testing.T) {
	if j := DeadLetterJSONOf(&ordersync.DeadLetter{Body: []byte(`{"a":1}`)}); string(j.Body) != `{"a":1}` || j.BodyText != "" {
		t.Errorf("JSON body: %+v", j)
	}
	if j := DeadLetterJSONOf(&ordersync.DeadLetter{Body: []byte("not json")}); j.Body != nil || j.BodyText != "not json" {
		t.Errorf("text body: %+v", j)
	}
}
