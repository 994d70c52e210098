package dispatch_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// TestUpgradeDeliversOrderEventsWrittenTheOldWay feeds the orders stream an
// order's events as the releases before wrote them: the mirrored order as
// data, Nats-Msg-Id, and Ordersync-From-Status only since the release that
// added it (the oldest events have none). The dispatcher of this release
// delivers both, in order, with the status change each one carries.
func TestUpgradeDeliversOrderEventsWrittenTheOldWay(t *testing.T) {
	t.Parallel()
	e := newDispatchEnv(t)
	srv := newEndpointServer(t, hookSecret, nil)
	ep := e.addEndpoint(t, srv.URL)
	ns := ordersync.Namespace(e.queueCfg.SubjectPrefix)
	old := []struct {
		msgID, subject, from string // from "": no Ordersync-From-Status header
		payload              string
	}{
		{"default:OLD1:status:PENDING:1", ns.Subject(ordersync.SubjectStatusPrefix + "PENDING"), "",
			`{"orderCode":"OLD1","orderId":1,"orderStatus":"PENDING","account":"default","sync":{"fetchSeq":1}}`},
		{"default:OLD1:paid", ns.Subject(ordersync.SubjectPaid), "PENDING",
			`{"orderCode":"OLD1","orderId":1,"orderStatus":"PAID","account":"default","sync":{"fetchSeq":2}}`},
	}
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	for _, m := range old {
		msg := &nats.Msg{Subject: m.subject, Header: nats.Header{}, Data: []byte(m.payload)}
		msg.Header.Set("Nats-Msg-Id", m.msgID)
		if m.from != "" {
			msg.Header.Set("Ordersync-From-Status", m.from)
		}
		if _, err := js.PublishMsg(context.Background(), msg); err != nil {
			t.Fatalf("publish %s: %v", m.msgID, err)
		}
	}
	e.deliveries(t, "OLD1", 2)
	got := srv.requests()
	if len(got) != 2 {
		t.Fatalf("endpoint got %d requests, want 2", len(got))
	}
	want := []struct{ typ, from, to string }{
		{"order.status_changed", "null", `"PENDING"`},
		{"order.paid", `"PENDING"`, `"PAID"`},
	}
	for i, r := range got {
		var body struct {
			Type string `json:"type"`
			Data struct {
				StatusChange struct {
					From json.RawMessage `json:"from"`
					To   json.RawMessage `json:"to"`
				} `json:"statusChange"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("request %d: %v: %s", i, err, r.body)
		}
		if r.verify != nil || r.id != delivery.WebhookID(ep.ID, old[i].msgID) || body.Type != want[i].typ ||
			string(body.Data.StatusChange.From) != want[i].from || string(body.Data.StatusChange.To) != want[i].to {
			t.Errorf("request %d: verify %v, id %s, type %s, statusChange %s→%s; want a signed %s %s→%s with id %s",
				i, r.verify, r.id, body.Type, body.Data.StatusChange.From, body.Data.StatusChange.To,
				want[i].typ, want[i].from, want[i].to, delivery.WebhookID(ep.ID, old[i].msgID))
		}
	}
}
