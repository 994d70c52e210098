package ordersync

import "context"

// Upstream is the payment link service as ordersync uses it. Errors are
// *UpstreamError.
type Upstream interface {
	CreatePaymentLink(ctx context.Context, params PaymentLinkParams) (*PaymentLinkResult, error)
	GetOrder(ctx context.Context, orderCode string) (*Order, error)
}
