package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Upstream is the payment link service in memory, for the tests of a
// stage that calls it and is not about HTTP: links create PENDING orders,
// a test changes an order with SetOrder and makes a fetch fail with
// FailNext, and Fetches counts GetOrder's calls. Errors are
// *ordersync.UpstreamError, as paymentlink.Client's. It keeps no
// catalogue: a line item by SKU is refused as unknown.
type Upstream struct {
	mu       sync.Mutex
	orders   map[string]ordersync.Order
	nextID   int64
	failures map[string][]error
	fetches  map[string]int
}

var _ ordersync.Upstream = (*Upstream)(nil)

// NewUpstream returns a service with no orders.
func NewUpstream() *Upstream {
	return &Upstream{orders: map[string]ordersync.Order{}, nextID: 1, failures: map[string][]error{}, fetches: map[string]int{}}
}

var zero = ordersync.MustAmount("0.00")

// CreatePaymentLink validates params as the service does and creates a
// PENDING order.
func (u *Upstream) CreatePaymentLink(_ context.Context, p ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	const op = "create payment link"
	if err := p.Validate(ordersync.English); err != nil {
		var verr *ordersync.ValidationError
		if !errors.As(err, &verr) {
			verr = &ordersync.ValidationError{Fields: map[string][]string{"$": {err.Error()}}}
		}
		return nil, &ordersync.UpstreamError{Kind: ordersync.UpstreamValidation, Op: op, StatusCode: 400, Validation: verr, Err: err}
	}
	for i, it := range p.LineItems {
		if it.Product == nil {
			verr := &ordersync.ValidationError{Fields: map[string][]string{
				fmt.Sprintf("lineItems[%d].sku", i): {fmt.Sprintf("The product with SKU '%s' does not exist.", strings.TrimSpace(it.SKU))}}}
			return nil, &ordersync.UpstreamError{Kind: ordersync.UpstreamValidation, Op: op, StatusCode: 400, Validation: verr, Err: verr}
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	id := ordersync.ID(strconv.FormatInt(u.nextID, 10))
	code := fmt.Sprintf("Fk%05d", u.nextID)
	u.nextID++
	o := ordersync.Order{
		OrderID: id, OrderCode: code, OrderReference: p.OrderReference, Name: cmp.Or(p.OrderName, ordersync.DefaultOrderName),
		Description: p.OrderDescription, LineItems: []ordersync.LineItem{}, OrderStatus: ordersync.StatusPending,
		TotalDetails:   ordersync.Totals{ShippingAmount: zero, DiscountAmount: zero, SurchargeAmount: zero},
		Metadata:       append([]ordersync.MetadataEntry{}, p.Metadata...),
		PaymentLinkURL: "https://pay.example/" + code, SuccessURL: p.SuccessURL, CancelURL: p.CancelURL,
		Created: ordersync.Timestamp{Time: time.Now().UTC().Truncate(time.Millisecond)},
	}
	if p.Amount != nil {
		o.Subtotal = *p.Amount
	} else {
		o.Subtotal = ordersync.AmountFromInt(0)
		for i, it := range p.LineItems {
			li := ordersync.LineItem{ProductID: ordersync.ID(fmt.Sprintf("%s-%d", code, i+1)), Name: it.Product.Name,
				Price: *it.Product.Price, ImageURL: it.Product.ImageURL, Quantity: it.Quantity}
			li.SubTotal = li.Price.MulInt(int64(it.Quantity))
			o.Subtotal = o.Subtotal.Add(li.SubTotal)
			o.LineItems = append(o.LineItems, li)
		}
	}
	o.Total = o.Subtotal
	u.orders[code] = o
	return &ordersync.PaymentLinkResult{OrderCode: code, OrderID: id, PaymentLinkURL: o.PaymentLinkURL}, nil
}

// GetOrder returns the order's detail, or the next failure FailNext queued
// for it; an unknown code is UpstreamNotFound.
func (u *Upstream) GetOrder(ctx context.Context, code string) (*ordersync.Order, error) {
	op := "get order " + code
	if err := ctx.Err(); err != nil {
		return nil, &ordersync.UpstreamError{Kind: ordersync.UpstreamTransport, Op: op, Err: err}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.fetches[code]++
	if errs := u.failures[code]; len(errs) > 0 {
		u.failures[code] = errs[1:]
		return nil, errs[0]
	}
	o, ok := u.orders[code]
	if !ok {
		return nil, &ordersync.UpstreamError{Kind: ordersync.UpstreamNotFound, Op: op, StatusCode: 404, Err: ordersync.ErrNotFound}
	}
	return &o, nil
}

// SetOrder makes the service hold o, as after a payment or a
// cancellation.
func (u *Upstream) SetOrder(o ordersync.Order) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.orders[o.OrderCode] = o
}

// FailNext makes the next GetOrder of code fail with err, after the
// failures queued before it.
func (u *Upstream) FailNext(code string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failures[code] = append(u.failures[code], err)
}

// Fetches is how many times GetOrder was called for code.
func (u *Upstream) Fetches(code string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fetches[code]
}
