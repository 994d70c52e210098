package paymentlink_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/ordersync/ordersync/paymentlink"
)

// cannedTransport answers every request with the same order detail, so the
// budget below counts the client's work (the request, the answer's
// reading and decoding), not a network's or a server's.
type cannedTransport struct {
	doc  []byte
	body *rereader
}

// rereader is a response body read again on every request.
type rereader struct{ bytes.Reader }

func (*rereader) Close() error { return nil }

func (c *cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.body.Reset(c.doc)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: c.body, ContentLength: int64(len(c.doc)), Request: r}, nil
}

// fetchAllocBudget is the most allocations one fetch of an order detail
// may cost the client, decoding included. It sits about a tenth above the
// count when it was set, so that a change of Go's runtime or net/http does
// not fail it, while a second decode or a copy of the document does.
const fetchAllocBudget = 44

// TestFetchAllocBudget holds the fetch-and-decode to its allocation
// budget: a count, not a time, so it does not depend on the machine.
func TestFetchAllocBudget(t *testing.T) {
	tr := &cannedTransport{doc: fixture(t, "order-paid.json"), body: &rereader{}}
	c, err := paymentlink.New(paymentlink.Config{BaseURL: "http://payments.invalid", SecretKey: testKey, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.GetOrder(ctx, "yY7Mcnd"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per fetch (budget %d)", allocs, fetchAllocBudget)
	if allocs > fetchAllocBudget {
		t.Errorf("a fetch allocates %.0f times, over its budget of %d", allocs, fetchAllocBudget)
	}
}
