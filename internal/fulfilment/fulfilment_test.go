package fulfilment

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// post sends one signed delivery (or one with a wrong secret) and returns
// the status.
func post(t *testing.T, e *Endpoint, id, body string, secret string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL(), bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if err := delivery.Sign(req.Header, id, time.Now(), []byte(body), secret); err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

func change(code string, from, to ordersync.Status) string {
	f := "null"
	if from != "" {
		f = `"` + string(from) + `"`
	}
	return fmt.Sprintf(`{"type":"order.status_changed","data":{"orderCode":%q,"statusChange":{"from":%s,"to":%q}}}`, code, f, to)
}

func paid(code string) string {
	return fmt.Sprintf(`{"type":"order.paid","data":{"orderCode":%q,"statusChange":{"from":"PENDING","to":"PAID"}}}`, code)
}

// TestEndpointChecksWhatArrives: the endpoint counts what a merchant's
// receiver must notice. In order, each once, signed: complete and clean. A
// redelivered webhook-id is a duplicate, not a second PAID; a second
// order.paid under another id is; a bad signature is refused; an event
// before the one that precedes it in its order's life is out of order.
func TestEndpointChecksWhatArrives(t *testing.T) {
	e, err := Start(Faults{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	// Order a: PENDING, PAID, order.paid, FINALIZED, in order, one redelivery.
	for i, body := range []string{change("a", "", "PENDING"), change("a", "PENDING", "PAID"), paid("a"), change("a", "PAID", "FINALIZED")} {
		if st, _ := post(t, e, fmt.Sprintf("msg_a%d", i), body, Secret); st != http.StatusNoContent {
			t.Fatalf("delivery %d: status %d", i, st)
		}
	}
	post(t, e, "msg_a2", paid("a"), Secret)
	triggers := map[string]int{"a": 1}
	statuses := map[string]ordersync.Status{"a": ordersync.StatusFinalized}
	r, complete := e.Report(triggers, statuses)
	if !complete || r.Paid != 1 || r.Missing != 0 || r.Duplicates != 1 || r.Redelivered != 1 || r.PaidTwice != 0 || r.OutOfOrder != 0 || r.Changes != 3 {
		t.Errorf("in order with one redelivery: %+v, complete %v", r, complete)
	}

	// Order b: FINALIZED arrives before order.paid; then a second order.paid
	// under a new id; and a delivery signed with another secret.
	post(t, e, "msg_b0", change("b", "", "PENDING"), Secret)
	post(t, e, "msg_b1", change("b", "PENDING", "PAID"), Secret)
	post(t, e, "msg_b3", change("b", "PAID", "FINALIZED"), Secret)
	post(t, e, "msg_b2", paid("b"), Secret)
	post(t, e, "msg_b4", paid("b"), Secret)
	if st, _ := post(t, e, "msg_b5", change("b", "FINALIZED", "PAID"), "whsec_"+"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"); st != http.StatusUnauthorized {
		t.Errorf("a delivery signed with another secret: status %d, want 401", st)
	}
	triggers["b"] = 1
	statuses["b"] = ordersync.StatusFinalized
	r, _ = e.Report(triggers, statuses)
	if r.OutOfOrder != 1 || r.PaidTwice != 1 || r.BadSignatures != 1 {
		t.Errorf("order.paid after FINALIZED, paid twice, one bad signature: %+v", r)
	}

	// Order c: a status change whose from is not the last to.
	post(t, e, "msg_c0", change("c", "", "PENDING"), Secret)
	post(t, e, "msg_c1", change("c", "PAID", "FINALIZED"), Secret)
	if r, _ = e.Report(triggers, statuses); r.OutOfOrder != 2 {
		t.Errorf("a change from PAID after PENDING: %d out of order, want 2", r.OutOfOrder)
	}
	// Order d never arrives: incomplete, and missing.
	triggers["d"] = 1
	if r, complete = e.Report(triggers, statuses); complete || r.Missing != 1 {
		t.Errorf("an order.paid never delivered: %+v, complete %v", r, complete)
	}
}

// TestEndpointFaults: the faults answer 500, 429 with Retry-After, and hang
// until the sender gives up; after StopFaults every attempt is taken.
func TestEndpointFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults Faults
		want   int
	}{
		{"5xx", Faults{Error5xx: 1}, http.StatusInternalServerError},
		{"429", Faults{TooMany: 1, RetryAfter: 7 * time.Second}, http.StatusTooManyRequests},
		{"hang", Faults{Hang: 1, HangFor: 300 * time.Millisecond}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(tc.faults)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			start := time.Now()
			st, h := post(t, e, "msg_1", change("a", "", "PENDING"), Secret)
			if st != tc.want {
				t.Fatalf("status %d, want %d", st, tc.want)
			}
			if tc.want == http.StatusTooManyRequests && h.Get("Retry-After") != "7" {
				t.Errorf("Retry-After %q, want 7", h.Get("Retry-After"))
			}
			if tc.name == "hang" && time.Since(start) < 300*time.Millisecond {
				t.Errorf("answered after %s, before the hang ended", time.Since(start))
			}
			e.StopFaults()
			if st, _ := post(t, e, "msg_1", change("a", "", "PENDING"), Secret); st != http.StatusNoContent {
				t.Errorf("after StopFaults: status %d", st)
			}
			r, _ := e.Report(nil, nil)
			if r.Attempts != 2 || r.Injected != 1 || r.Changes != 1 {
				t.Errorf("report %+v, want 2 attempts, 1 injected, 1 change", r)
			}
		})
	}
}
