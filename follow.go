package ordersync

import "context"

// Follower makes the mirror know every order it must follow: links created
// through ordersync, and orders created elsewhere that a user asks to track.
type Follower interface {
	// CreatePaymentLink creates the link upstream and records the order in
	// the mirror at once, so later webhooks carrying only orderId resolve.
	CreatePaymentLink(ctx context.Context, account string, params PaymentLinkParams) (*PaymentLinkResult, error)
	// TrackOrder fetches an order now and mirrors it; its webhooks are
	// followed from then on.
	TrackOrder(ctx context.Context, account, orderCode string) (*MirroredOrder, error)
}
