package worker

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

var update = flag.Bool("update", false, "write the golden files of the delivery wire format")

// wireCases are order events as the outbox publishes them: the delivery
// body built from each must keep its bytes, so receivers see no change.
var wireCases = []struct {
	name    string
	event   ordersync.HookEvent
	from    ordersync.Status
	at      time.Time
	payload string
}{
	{"first_seen", ordersync.HookOrderStatusChanged, "", time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC),
		`{"orderCode":"A1","orderId":1,"orderStatus":"PENDING","account":"default","sync":{"fetchSeq":1}}`},
	{"paid", ordersync.HookOrderPaid, ordersync.StatusPending, time.Date(2026, 3, 1, 9, 31, 2, 123456789, time.FixedZone("CET", 3600)),
		`{"orderCode":"A1","orderId":1,"orderStatus":"PAID","account":"default","amount":"12.50","currency":"EUR","sync":{"fetchSeq":2}}`},
	{"escapes_and_order", ordersync.HookOrderStatusChanged, ordersync.StatusPaid, time.Date(2026, 3, 2, 0, 0, 0, 1000, time.UTC),
		"{ \"sync\" : {\"fetchSeq\": 7},\n \"orderStatus\":\"FINALIZED\", \"note\":\"<b>Tom & Jerry</b> \u00e9\\u2028\", \"orderCode\":\"Z-9\", \"items\":[{\"qty\":1.0e2,\"name\":\"caf\u00e9\"}], \"account\":\"acme\"}"},
	{"replaces_status_change", ordersync.HookOrderStatusChanged, ordersync.StatusPending, time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC),
		`{"orderCode":"B2","orderStatus":"CANCELLED","statusChange":{"from":"x"},"account":"default"}`},
	{"no_status", ordersync.HookOrderStatusChanged, "", time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC),
		`{"orderCode":"C3","account":"default"}`},
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "delivery", "testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s changed:\n got %s\nwant %s", name, got, want)
	}
}

func TestWireFormatGolden(t *testing.T) {
	for _, c := range wireCases {
		body, err := eventBody(c.event, c.at, ordersync.OrderEvent{MsgID: "m", Payload: []byte(c.payload), FromStatus: c.from})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		golden(t, "body_"+c.name+".json", body)
	}
	// The ping's body, encoded as Ping encodes it.
	at := time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.FixedZone("CET", 3600))
	data, _ := json.Marshal(map[string]string{"endpoint": "ep_1"})
	ping, err := json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{delivery.EventPing, at.UTC(), data})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "body_ping.json", ping)
	var ids strings.Builder
	for _, c := range [][2]string{{"ep_1", "default:A1:paid"}, {"ep_1", "default:A1:status:PAID:2"}, {"ep_2", "default:A1:paid"},
		{"", ""}, {"ép", "acme:Z-9:status:FINALIZED:7"}, {"ep_1", "ping:2026-03-01T09:30:00.123456789Z"}} {
		fmt.Fprintf(&ids, "%q %q %s\n", c[0], c[1], WebhookID(c[0], c[1]))
	}
	golden(t, "webhook_ids.txt", []byte(ids.String()))
}
