package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
)

// oldEvent is an event as releases before this one wrote it to the events
// stream: the webhook body as data, what the receiver knew in headers. The
// header names and value forms are spelled out here on purpose, not taken
// from the queue's constants: a new format must still read these, because
// a stream upgraded in place holds them.
type oldEvent struct {
	subjectAccount string
	headers        map[string]string
	body           []byte
}

// TestUpgradeReadsEventsWrittenTheOldWay feeds the events stream messages
// in the format of the releases before (headers Ordersync-Account,
// Ordersync-Received-At as RFC 3339 with nanoseconds, Ordersync-Signature,
// Ordersync-Ignored, Ordersync-Cause; and, the oldest form, no account
// header, the account being the subject's last token) beside one in this
// release's form (Ordersync-Received-Unix-Nano), and checks a pool of this
// release syncs, ignores and logs them as those releases did.
func TestUpgradeReadsEventsWrittenTheOldWay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	orders := e.createOrders(t, 2)
	if _, err := e.sim.Pay(orders[0].OrderCode, ordersync.Buyer{Name: "Ana", Email: "ana@example.com"}); err != nil {
		t.Fatalf("Pay: %v", err)
	}
	received := time.Date(2026, 11, 20, 9, 30, 1, 123456000, time.UTC)
	body := func(id ordersync.ID, typ string) []byte {
		return fmt.Appendf(nil, `{"orderId":%q,"orderReference":null,"orderType":"FASTLINK_CHARGE","description":"x","metadata":null,"level":"Info","type":%q}`, id, typ)
	}
	created := e.createOrders(t, 1)[0]
	old := map[string]oldEvent{
		"new-received-nanos": {"default", map[string]string{
			"Ordersync-Received-Unix-Nano": fmt.Sprint(received.Add(3 * time.Second).UnixNano()),
			"Ordersync-Signature":          "valid",
			"Ordersync-Cause":              "webhook",
		}, body(created.OrderID, "Created")},
		"old-paid": {"default", map[string]string{
			"Ordersync-Account":     "default",
			"Ordersync-Received-At": received.Format(time.RFC3339Nano),
			"Ordersync-Signature":   "valid",
			"Ordersync-Cause":       "webhook",
		}, body(orders[0].OrderID, "SuccessPayment")},
		"old-no-account-header": {"default", map[string]string{
			"Ordersync-Received-At": received.Add(time.Second).Format(time.RFC3339Nano),
			"Ordersync-Signature":   "valid",
		}, body(orders[1].OrderID, "Created")},
		"old-ignored": {"default", map[string]string{
			"Ordersync-Account":     "default",
			"Ordersync-Received-At": received.Add(2 * time.Second).Format(time.RFC3339Nano),
			"Ordersync-Signature":   "valid",
			"Ordersync-Ignored":     "other_product",
			"Ordersync-Cause":       "webhook",
		}, readFixture(t, "webhook-other-product-coupon-app.json")},
	}
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id, ev := range old {
		msg := &nats.Msg{Subject: e.q.EventSubject(ev.subjectAccount), Header: nats.Header{}, Data: ev.body}
		msg.Header.Set("Nats-Msg-Id", id)
		for k, v := range ev.headers {
			msg.Header.Set(k, v)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}

	e.startPool(t, e.newSyncer(t, nil, nil), nil)
	e.waitDrained(t, 10*time.Second)
	e.assertMirrorMatchesSim(t, []string{orders[0].OrderCode, orders[1].OrderCode, created.OrderCode})

	evs, err := e.db.ListEvents(ctx, ordersync.EventFilter{Limit: 10})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	want := map[string]struct {
		outcome  ordersync.EventOutcome
		received time.Time
	}{
		"old-paid":              {ordersync.OutcomeSynced, received},
		"old-no-account-header": {ordersync.OutcomeSynced, received.Add(time.Second)},
		"old-ignored":           {ordersync.OutcomeIgnored, received.Add(2 * time.Second)},
		"new-received-nanos":    {ordersync.OutcomeSynced, received.Add(3 * time.Second)},
	}
	if len(evs) != len(want) {
		t.Fatalf("event log has %d rows, want %d", len(evs), len(want))
	}
	for _, ev := range evs {
		w, ok := want[ev.MsgID]
		if !ok {
			t.Errorf("event log has %s, which was not published", ev.MsgID)
			continue
		}
		if ev.Outcome != w.outcome || ev.Account != ordersync.DefaultAccount || ev.Signature != ordersync.SignatureValid || !ev.ReceivedAt.Equal(w.received) {
			t.Errorf("event %s: outcome %q, account %q, signature %q, received %v; want %q, %q, %q, %v",
				ev.MsgID, ev.Outcome, ev.Account, ev.Signature, ev.ReceivedAt, w.outcome, ordersync.DefaultAccount, ordersync.SignatureValid, w.received)
		}
	}
	// The old receipt time still sets when ordersync learned of the payment.
	paid, err := e.db.FindOrderByCode(ctx, ordersync.DefaultAccount, orders[0].OrderCode)
	if err != nil {
		t.Fatalf("FindOrderByCode: %v", err)
	}
	if paid.Sync.PaidAt == nil || !paid.Sync.PaidAt.Equal(received) {
		t.Errorf("paid at %v, want the old header's receipt %v", paid.Sync.PaidAt, received)
	}
	if n := len(e.deadLetters(t, "")); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
}
