package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/sim"
)

// TestUpstreamContract holds fake.Upstream to what paymentlink.Client
// answers from the simulator over HTTP: the same cases, the same answers.
func TestUpstreamContract(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) ordersync.Upstream
	}{
		{"fake", func(*testing.T) ordersync.Upstream { return fake.NewUpstream() }},
		{"simulator", openSimulator},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Run("CreateThenGet", func(t *testing.T) { upstreamCreateThenGet(t, c.open(t)) })
			t.Run("LineItems", func(t *testing.T) { upstreamLineItems(t, c.open(t)) })
			t.Run("Refusals", func(t *testing.T) { upstreamRefusals(t, c.open(t)) })
		})
	}
}

func openSimulator(t *testing.T) ordersync.Upstream {
	t.Helper()
	const key = "contract-key"
	s, err := sim.New(sim.Config{SecretKey: key, Seed: 7})
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	url, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("sim Listen: %v", err)
	}
	c, err := paymentlink.New(paymentlink.Config{BaseURL: url, SecretKey: key, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("paymentlink.New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// upstreamCreateThenGet: a link creates a PENDING order that GetOrder
// returns with the link's code, id, reference, name, amount and metadata.
func upstreamCreateThenGet(t *testing.T, u ordersync.Upstream) {
	ctx := context.Background()
	amount := ordersync.MustAmount("25.40")
	p := ordersync.PaymentLinkParams{Amount: &amount, OrderReference: "ref-contract-1", OrderDescription: "two coffees",
		Metadata: []ordersync.MetadataEntry{{Name: "table", Value: "7"}}}
	res, err := u.CreatePaymentLink(ctx, p)
	if err != nil {
		t.Fatalf("CreatePaymentLink: %v", err)
	}
	if res.OrderCode == "" || res.OrderID == "" || res.PaymentLinkURL == "" {
		t.Fatalf("CreatePaymentLink = %+v, want a code, an id and a link", res)
	}
	o, err := u.GetOrder(ctx, res.OrderCode)
	if err != nil {
		t.Fatalf("GetOrder(%s): %v", res.OrderCode, err)
	}
	if o.OrderCode != res.OrderCode || o.OrderID != res.OrderID || o.OrderReference != p.OrderReference ||
		o.OrderStatus != ordersync.StatusPending || o.Name != ordersync.DefaultOrderName || o.Description != p.OrderDescription ||
		o.PaymentLinkURL != res.PaymentLinkURL {
		t.Errorf("GetOrder = code %s id %s ref %q status %s name %q description %q link %q; want the link's, PENDING, the default name",
			o.OrderCode, o.OrderID, o.OrderReference, o.OrderStatus, o.Name, o.Description, o.PaymentLinkURL)
	}
	if o.Subtotal.Cmp(amount) != 0 || o.Total.Cmp(amount) != 0 || len(o.LineItems) != 0 {
		t.Errorf("amounts: subtotal %s total %s, %d lines; want %s, %s, none", o.Subtotal, o.Total, len(o.LineItems), amount, amount)
	}
	if len(o.Metadata) != 1 || o.Metadata[0] != p.Metadata[0] {
		t.Errorf("metadata %+v, want %+v", o.Metadata, p.Metadata)
	}
	if o.Created.IsZero() {
		t.Error("the order has no creation time")
	}
}

// upstreamLineItems: one-time products make the lines and the total.
func upstreamLineItems(t *testing.T, u ordersync.Upstream) {
	ctx := context.Background()
	price := ordersync.MustAmount("3.25")
	res, err := u.CreatePaymentLink(ctx, ordersync.PaymentLinkParams{OrderName: "Mesa 7", LineItems: []ordersync.LineItemParams{
		{Quantity: 2, Product: &ordersync.ProductParams{Name: "Café", Price: &price}},
	}})
	if err != nil {
		t.Fatalf("CreatePaymentLink: %v", err)
	}
	o, err := u.GetOrder(ctx, res.OrderCode)
	if err != nil {
		t.Fatalf("GetOrder: %v", err)
	}
	want := ordersync.MustAmount("6.50")
	if o.Name != "Mesa 7" || len(o.LineItems) != 1 || o.LineItems[0].Quantity != 2 || o.LineItems[0].SubTotal.Cmp(want) != 0 || o.Total.Cmp(want) != 0 {
		t.Errorf("order %q, lines %+v, total %s; want Mesa 7, one line of 2 at 6.50", o.Name, o.LineItems, o.Total)
	}
}

// upstreamRefusals: an invalid link is a validation error and an unknown
// code is not found, neither retryable.
func upstreamRefusals(t *testing.T, u ordersync.Upstream) {
	ctx := context.Background()
	_, err := u.CreatePaymentLink(ctx, ordersync.PaymentLinkParams{})
	var uerr *ordersync.UpstreamError
	if !errors.As(err, &uerr) || uerr.Kind != ordersync.UpstreamValidation || uerr.Retryable() || uerr.Validation == nil {
		t.Errorf("a link without amount or lines: %v, want a validation error with its fields", err)
	}
	_, err = u.CreatePaymentLink(ctx, ordersync.PaymentLinkParams{LineItems: []ordersync.LineItemParams{{SKU: "NO-SUCH-SKU", Quantity: 1}}})
	if !errors.As(err, &uerr) || uerr.Kind != ordersync.UpstreamValidation || uerr.Validation == nil || len(uerr.Validation.Fields["lineItems[0].sku"]) != 1 {
		t.Errorf("a link of an unknown SKU: %v, want a validation error on lineItems[0].sku", err)
	}
	_, err = u.GetOrder(ctx, "Nope404")
	if !errors.As(err, &uerr) || uerr.Kind != ordersync.UpstreamNotFound || uerr.Retryable() {
		t.Errorf("GetOrder of an unknown code: %v, want not found, not retryable", err)
	}
}
