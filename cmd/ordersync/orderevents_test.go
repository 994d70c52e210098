package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestOrderEventsShowDeliveries: once an order's PAID reached one endpoint
// and was refused for good by another, its event log shows both — through
// the admin API, and `orders events` as a table and as the API's JSON.
func TestOrderEventsShowDeliveries(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{Seed: 13})
	ctx := context.Background()
	c := &admin.Client{BaseURL: st.Program.AdminURL()}
	hook := &hookReceiver{secret: testEndpointSecret}
	good := httptest.NewServer(hook)
	t.Cleanup(good.Close)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such customer", http.StatusUnprocessableEntity)
	}))
	t.Cleanup(refusing.Close)
	var eps []api.EndpointJSON
	for _, url := range []string{good.URL, refusing.URL} {
		var ep api.EndpointJSON
		if err := c.Do(ctx, http.MethodPost, "/v1/endpoints", api.EndpointParamsJSON{URL: url,
			Events: []string{string(ordersync.HookOrderPaid)}, Secret: testEndpointSecret}, &ep); err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}

	codes, err := createDemoOrders(ctx, st.Program.AdminURL(), ordersync.DefaultAccount, 1, rand.New(rand.NewPCG(13, 13)))
	if err != nil {
		t.Fatal(err)
	}
	code := codes[0]
	if _, err := st.Sim.Pay(code, ordersync.Buyer{Name: "Ana"}); err != nil {
		t.Fatal(err)
	}
	// The API's answer, once both deliveries ended.
	var log api.EventList
	byEndpoint := map[string]api.EventJSON{}
	testenv.Await(t, 20*time.Second, 50*time.Millisecond, func() error {
		if err := c.Do(ctx, http.MethodGet, "/v1/orders/"+code+"/events", nil, &log); err != nil {
			t.Fatal(err)
		}
		for _, e := range log.Events {
			if e.Kind == api.EventKindDelivery {
				byEndpoint[e.EndpointID] = e
			}
		}
		if len(byEndpoint) < 2 {
			return fmt.Errorf("deliveries of 2 endpoints in the event log of %s: %+v", code, log.Events)
		}
		return nil
	})
	got := hook.requests()
	if len(got) != 1 || got[0].typ != "order.paid" || got[0].order != code {
		t.Fatalf("the endpoint received %+v", got)
	}
	if d := byEndpoint[eps[0].ID]; d.Type != "order.paid" || d.OrderCode != code || d.OrderStatus != ordersync.StatusPaid ||
		d.Outcome != "delivered" || d.WebhookID != got[0].id || d.Attempts != 1 || d.Status != http.StatusOK || d.At.IsZero() {
		t.Errorf("the delivery: %+v", d)
	}
	var letters struct {
		DeadLetters []api.DeliveryDeadLetterJSON `json:"deadLetters"`
	}
	if err := c.Do(ctx, http.MethodGet, "/v1/delivery-dead-letters?endpoint="+eps[1].ID, nil, &letters); err != nil || len(letters.DeadLetters) != 1 {
		t.Fatalf("delivery dead letters: %+v, %v", letters, err)
	}
	if d := byEndpoint[eps[1].ID]; d.Outcome != "dead_lettered" || d.Status != http.StatusUnprocessableEntity || d.Attempts != 1 ||
		d.WebhookID != letters.DeadLetters[0].WebhookID || !strings.Contains(d.Detail, "refused: no such customer") {
		t.Errorf("the dead-lettered delivery: %+v", d)
	}
	// Newest first, webhooks and deliveries together: the webhook that
	// told of the payment comes before (below) the deliveries it caused.
	for i := 1; i < len(log.Events); i++ {
		if log.Events[i].At.After(log.Events[i-1].At) {
			t.Errorf("entry %d (%s %s) is newer than the one above it", i, log.Events[i].Kind, log.Events[i].Type)
		}
	}
	if first := log.Events[len(log.Events)-1]; first.Kind != api.EventKindWebhook {
		t.Errorf("the oldest entry is a %s, want the webhook of the order's creation", first.Kind)
	}

	db := "--database-url=" + st.Program.Config().DatabaseURL
	out, err := runCLI(t, "orders", "events", "--order-code", code, db)
	if err != nil {
		t.Fatalf("orders events: %v\n%s", err, out)
	}
	for _, want := range []string{
		"PAID to " + eps[0].ID + ", HTTP 200, 1 attempt, " + got[0].id,
		"PAID to " + eps[1].ID + ", HTTP 422, 1 attempt, " + letters.DeadLetters[0].WebhookID + ", dead letter ",
		"delivered", "dead_lettered", "SuccessPayment",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("orders events lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "orders", "events", "--order-code", code, db, "--json")
	if err != nil || !strings.Contains(out, `"kind": "delivery"`) || !strings.Contains(out, `"webhookId": "`+got[0].id+`"`) {
		t.Errorf("orders events --json: %v\n%s", err, out)
	}
}
