// Package ordersync holds the domain of the order mirror: the payment link
// service's order detail and checkout request, the webhook event that hints at
// a change, exact money, the errors every adapter translates into, and the
// small interfaces the adapters implement.
//
// It imports no adapter. The packages that talk to the outside world
// (paymentlink, sim, webhook, queue, worker, store, metrics) import this one,
// never each other; cmd/ordersync wires them together.
package ordersync
