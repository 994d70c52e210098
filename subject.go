package ordersync

import "strings"

// Subjects ordersync publishes order events on, through the outbox. They
// are the domain's names, those of DefaultNamespace; a deployment in another
// namespace publishes the same events under it (Namespace.Subject).
const (
	// SubjectPaid carries the PAID trigger, exactly once per order.
	SubjectPaid = "ordersync.orders.paid"
	// SubjectStatusPrefix + STATUS carries every status change.
	SubjectStatusPrefix = "ordersync.orders.status."
	// SubjectOrdersPrefix begins every order subject.
	SubjectOrdersPrefix = "ordersync.orders."
)

// Namespace is the first token (or tokens) of the subjects a deployment
// publishes on, so that several deployments can share one NATS server.
type Namespace string

// DefaultNamespace is the namespace of the domain's subjects.
const DefaultNamespace Namespace = "ordersync"

// OrdersPrefix begins every order subject in the namespace.
func (n Namespace) OrdersPrefix() string { return string(n) + ".orders." }

// Subject is the subject in the namespace of a domain order subject:
// SubjectPaid in namespace "shop" is "shop.orders.paid". A subject already
// in the namespace, or not an order subject at all, is returned as it is.
func (n Namespace) Subject(subject string) string {
	prefix := n.OrdersPrefix()
	if strings.HasPrefix(subject, prefix) {
		return subject
	}
	if rest, ok := strings.CutPrefix(subject, SubjectOrdersPrefix); ok {
		return prefix + rest
	}
	return subject
}

// DomainSubject is the domain subject of an order subject in the
// namespace, the inverse of Subject: "shop.orders.paid" in namespace "shop"
// is SubjectPaid. Any other subject is returned as it is.
func (n Namespace) DomainSubject(subject string) string {
	if rest, ok := strings.CutPrefix(subject, n.OrdersPrefix()); ok {
		return SubjectOrdersPrefix + rest
	}
	return subject
}
