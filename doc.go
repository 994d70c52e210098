// Package ordersync holds the domain of the order mirror: the payment link
// service's order detail and checkout request, the webhook event that hints at
// a change, exact money, the rules of a change and of the reconciler's
// schedule, endpoints, roles and the audit record, the errors every adapter
// translates into, and the small interfaces the adapters implement. Beside
// them sit a few helpers the adapters share: the order's JSON encoding, the
// parsing of Retry-After, the trusted proxies, and DiffOrders and
// MirrorMatch, which hold a mirror against the service's orders.
//
// It imports nothing of this module. The adapters that do I/O (paymentlink,
// sim, webhook, queue, worker, store, admin) import this package and a few
// support packages, never each other; internal/app builds the pipeline out
// of them, and the binaries cmd/ordersync and cmd/ordersync-lab run what it
// builds. docs/architecture.md names every package, what it owns and what
// it may import.
package ordersync
