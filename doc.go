// Package ordersync holds the domain of the order mirror: the payment link
// service's order detail and checkout request, the webhook event that hints at
// a change, exact money, the rules of a change and of the reconciler's
// schedule, endpoints, roles and the audit record, the errors every adapter
// translates into, and the small interfaces the adapters implement. Beside
// them sit the one JSON encoding of a mirrored order and DiffOrders, the
// field-by-field comparison of two order details that ChangedFields names
// a change's fields with. Each file holds one concept; docs/architecture.md
// lists them.
//
// It imports nothing of this module. The adapters that do I/O (paymentlink,
// sim, webhook, queue, worker, dispatch, store, admin) import this package
// and a few support packages, never each other; internal/app builds the
// pipeline out of them, and the binaries cmd/ordersync and
// cmd/ordersync-lab run what it builds. docs/architecture.md names every
// package, what it owns and what it may import.
package ordersync
