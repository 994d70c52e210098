package delivery_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/internal/testenv"
)

var update = flag.Bool("update", false, "write the golden files of the wire format")

// golden compares got with testdata/name. The files were written by the
// dispatcher before the wire format moved here: receivers must see the same
// bytes, so -update is for a deliberate change of the format only.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testenv.Golden(t, filepath.Join("testdata", name), got, *update)
}

// Order events as the outbox publishes them.
var orderEvents = []struct {
	name    string
	typ     string
	from    string
	at      time.Time
	payload string
}{
	{"first_seen", delivery.EventOrderStatusChanged, "", time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC),
		`{"orderCode":"A1","orderId":1,"orderStatus":"PENDING","account":"default","sync":{"fetchSeq":1}}`},
	{"paid", delivery.EventOrderPaid, "PENDING", time.Date(2026, 3, 1, 9, 31, 2, 123456789, time.FixedZone("CET", 3600)),
		`{"orderCode":"A1","orderId":1,"orderStatus":"PAID","account":"default","amount":"12.50","currency":"EUR","sync":{"fetchSeq":2}}`},
	{"escapes_and_order", delivery.EventOrderStatusChanged, "PAID", time.Date(2026, 3, 2, 0, 0, 0, 1000, time.UTC),
		"{ \"sync\" : {\"fetchSeq\": 7},\n \"orderStatus\":\"FINALIZED\", \"note\":\"<b>Tom & Jerry</b> \u00e9\\u2028\", \"orderCode\":\"Z-9\", \"items\":[{\"qty\":1.0e2,\"name\":\"caf\u00e9\"}], \"account\":\"acme\"}"},
	{"replaces_status_change", delivery.EventOrderStatusChanged, "PENDING", time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC),
		`{"orderCode":"B2","orderStatus":"CANCELLED","statusChange":{"from":"x"},"account":"default"}`},
	{"no_status", delivery.EventOrderStatusChanged, "", time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC),
		`{"orderCode":"C3","account":"default"}`},
}

func TestOrderEventBodyGolden(t *testing.T) {
	for _, c := range orderEvents {
		body, err := delivery.OrderEventBody(c.typ, c.at, []byte(c.payload), c.from)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		golden(t, "body_"+c.name+".json", body)
	}
	ping, err := delivery.PingBody("ep_1", time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.FixedZone("CET", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "body_ping.json", ping)
}

func TestOrderEventBodyRefusesNonObjects(t *testing.T) {
	for _, payload := range []string{``, `null`, `[]`, `"PAID"`, `{"orderCode":`} {
		if body, err := delivery.OrderEventBody(delivery.EventOrderPaid, time.Now(), []byte(payload), ""); err == nil {
			t.Errorf("OrderEventBody(%q) = %s, want an error", payload, body)
		}
	}
}

func TestWebhookIDGolden(t *testing.T) {
	var ids strings.Builder
	for _, c := range [][2]string{{"ep_1", "default:A1:paid"}, {"ep_1", "default:A1:status:PAID:2"}, {"ep_2", "default:A1:paid"},
		{"", ""}, {"ép", "acme:Z-9:status:FINALIZED:7"}, {"ep_1", "ping:2026-03-01T09:30:00.123456789Z"}} {
		fmt.Fprintf(&ids, "%q %q %s\n", c[0], c[1], delivery.WebhookID(c[0], c[1]))
	}
	golden(t, "webhook_ids.txt", []byte(ids.String()))
}
