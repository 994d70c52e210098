package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ordersync/ordersync"
)

// discardPublisher takes every event as durable at once, so the budget
// below counts the receiver's own allocations, not JetStream's.
type discardPublisher struct{ n int }

func (p *discardPublisher) PublishEvent(context.Context, *ordersync.InboundEvent) (bool, error) {
	p.n++
	return false, nil
}

// rereader is a request body read again on every run.
type rereader struct{ bytes.Reader }

func (*rereader) Close() error { return nil }

// discardWriter is a response writer reused on every run.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// receiverAllocBudget is the most allocations one accepted webhook may
// cost the receiver (read, verify, parse, hand to the publisher, answer).
// It sits a few allocations above the count when it was set, so that a
// change of Go's runtime or of net/http's internals does not fail it,
// while one more copy of the body or one more parse does.
const receiverAllocBudget = 23

// TestReceiverAllocBudget holds the receiver's path to its allocation
// budget: a count, not a time, so it does not depend on the machine.
func TestReceiverAllocBudget(t *testing.T) {
	pub := &discardPublisher{}
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: pub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	body := []byte(`{"orderId":"22805","orderReference":"ped_7f3c2a91","orderType":"FASTLINK_CHARGE","description":"La orden fue pagada exitosamente","metadata":{"PaymentId":"pay_1","AuthorizationCode":"204981"},"level":"Info","type":"SuccessPayment"}`)
	req := httptest.NewRequest(http.MethodPost, Path, nil)
	req.Header.Set(SignatureHeader, Sign(oldSecret, body))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	rd := &rereader{}
	w := &discardWriter{h: http.Header{}}
	allocs := testing.AllocsPerRun(200, func() {
		rd.Reset(body)
		req.Body = rd
		clear(w.h)
		w.code = 0
		rc.ServeHTTP(w, req)
	})
	if w.code != http.StatusOK || pub.n == 0 {
		t.Fatalf("answer %d after %d publishes, want 200 after some", w.code, pub.n)
	}
	t.Logf("%.0f allocations per webhook (budget %d)", allocs, receiverAllocBudget)
	if allocs > receiverAllocBudget {
		t.Errorf("the receiver's path allocates %.0f times per webhook, over its budget of %d", allocs, receiverAllocBudget)
	}
}
