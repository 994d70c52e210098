package delivery_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync/delivery"
)

// bodyAllocBudget is the most allocations building the body of one order
// event may cost, for a mirrored order with three line items (a copy of an
// outbox payload). It sits a tenth above the count when it was set, so
// that a change of Go's encoding/json does not fail it, while decoding the
// order into a map (over a hundred allocations) does.
const bodyAllocBudget = 12

// TestOrderEventBodyAllocBudget holds the delivery body's build to its
// allocation budget: a count, not a time, so it does not depend on the
// machine.
func TestOrderEventBodyAllocBudget(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join("testdata", "order_payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 9, 31, 2, 0, time.UTC)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := delivery.OrderEventBody(delivery.EventOrderPaid, at, payload, "PENDING"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per body (budget %d)", allocs, bodyAllocBudget)
	if allocs > bodyAllocBudget {
		t.Errorf("building a delivery body allocates %.0f times, over its budget of %d", allocs, bodyAllocBudget)
	}
}

// TestUnsortedOrderEventBodyAllocBudget: an order whose members are not in
// name order, but otherwise as encoding/json writes them, is only sorted,
// not decoded into a map and encoded again: it keeps the same budget.
func TestUnsortedOrderEventBodyAllocBudget(t *testing.T) {
	payload := []byte(`{"orderCode":"B0000001","orderId":1,"orderStatus":"PENDING","account":"default","sync":{"fetchSeq":1}}`)
	at := time.Date(2026, 3, 1, 9, 31, 2, 0, time.UTC)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := delivery.OrderEventBody(delivery.EventOrderStatusChanged, at, payload, ""); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per body (budget %d)", allocs, bodyAllocBudget)
	if allocs > bodyAllocBudget {
		t.Errorf("building the body of an unsorted order allocates %.0f times, over its budget of %d", allocs, bodyAllocBudget)
	}
}

// headerBodyAllocBudget is the budget of a body built from an event's
// headers (OrderOf): the order, the status change and the body, nothing
// read from the payload.
const headerBodyAllocBudget = 3

// TestHeaderOrderEventBodyAllocBudget holds the build of a body from the
// headers to its budget.
func TestHeaderOrderEventBodyAllocBudget(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join("testdata", "order_payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	payload = bytes.TrimSpace(payload)
	at := time.Date(2026, 3, 1, 9, 31, 2, 0, time.UTC)
	split := bytes.Index(payload, []byte(`"store":`))
	allocs := testing.AllocsPerRun(200, func() {
		o, ok := delivery.OrderOf("acme & co", "yY7Mcnd", "PAID", payload, split)
		if !ok {
			t.Fatal("OrderOf refused the payload")
		}
		if _, err := o.EventBody(delivery.EventOrderPaid, at, "PENDING"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per body (budget %d)", allocs, headerBodyAllocBudget)
	if allocs > headerBodyAllocBudget {
		t.Errorf("building a delivery body from the headers allocates %.0f times, over its budget of %d", allocs, headerBodyAllocBudget)
	}
}
