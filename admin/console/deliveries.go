package console

import (
	"fmt"

	"github.com/ordersync/ordersync"
)

// deliveryEntry is how the order's timeline names one end of a delivery
// to an endpoint: each failed end apart (the dispatcher giving up after
// its retries, a replay failing again), then the latest, whatever it was.
func deliveryEntry(d ordersync.DeliveryRecord) (kind, detail string) {
	kind = "Delivery " + string(d.Event)
	if d.Outcome != ordersync.DeliveryDelivered {
		kind += " failed"
	}
	return kind, fmt.Sprintf("endpoint %s: %s after %d attempt(s), last HTTP status %d %s",
		d.EndpointID, d.Outcome, d.Attempts, d.Status, d.Detail)
}
