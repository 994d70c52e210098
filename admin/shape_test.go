package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestOneShapePerResource: an order has one JSON shape wherever the API
// answers it — lineItems and metadata are lists, never null, in the list
// as in the detail — and an event's orderId is a number, as in the order.
func TestOneShapePerResource(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	amount, err := ordersync.ParseAmount("12.50")
	if err != nil {
		t.Fatal(err)
	}
	link, err := e.sim.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount}) // Method 2: no line items
	if err != nil {
		t.Fatal(err)
	}
	if status, b := e.do(t, "POST", "/v1/orders/track", `{"orderCode":"`+link.OrderCode+`"}`); status != http.StatusOK {
		t.Fatalf("track: %d %s", status, b)
	}
	if err := e.db.RecordEvents(context.Background(), []ordersync.EventRecord{{MsgID: "shape-1", Account: ordersync.DefaultAccount,
		ReceivedAt: time.Now(), Type: ordersync.EventCreated, OrderID: ordersync.ID(link.OrderID), OrderCode: link.OrderCode,
		Signature: ordersync.SignatureValid, Outcome: ordersync.OutcomeSynced}}); err != nil {
		t.Fatal(err)
	}

	var list struct{ Orders []map[string]json.RawMessage }
	getJSON(t, e, "/v1/orders", &list)
	var detail map[string]json.RawMessage
	getJSON(t, e, "/v1/orders/"+link.OrderCode, &detail)
	if len(list.Orders) != 1 {
		t.Fatalf("listed %d orders, want 1", len(list.Orders))
	}
	for _, field := range []string{"lineItems", "metadata"} {
		for where, o := range map[string]map[string]json.RawMessage{"list": list.Orders[0], "detail": detail} {
			if v := string(o[field]); len(v) == 0 || v[0] != '[' {
				t.Errorf("%s of the order in the %s is %s, want a list", field, where, v)
			}
		}
	}

	for _, path := range []string{"/v1/events?orderCode=" + link.OrderCode, "/v1/orders/" + link.OrderCode + "/events"} {
		var events struct{ Events []map[string]json.RawMessage }
		getJSON(t, e, path, &events)
		if len(events.Events) != 1 {
			t.Fatalf("%s: %d events, want 1", path, len(events.Events))
		}
		if got, want := string(events.Events[0]["orderId"]), string(detail["orderId"]); got != want || got[0] == '"' {
			t.Errorf("%s: orderId %s, want the order's %s, a number", path, got, want)
		}
	}
}

func getJSON(t *testing.T, e *apiEnv, path string, v any) {
	t.Helper()
	status, b := e.do(t, "GET", path, "")
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}
