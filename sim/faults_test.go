package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

func TestFaultKindsMatchStreams(t *testing.T) {
	if len(faultKinds) != numFaultKinds {
		t.Fatalf("%d fault kinds, %d fault streams", len(faultKinds), numFaultKinds)
	}
}

// getStatuses fetches code n times and returns the status of each answer.
func getStatuses(t *testing.T, ts *testSim, code string, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		resp, b := ts.call(t, http.MethodGet, "/paymentlink/order/"+code, testKey, nil)
		out[i] = resp.StatusCode
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			if p, raw := decodeProblem(t, b); p.Type != ProblemTooManyRequests || p.Status != 429 || raw["errors"] != nil {
				t.Errorf("429 body %s", b)
			}
			if ra := resp.Header.Get("Retry-After"); ra != "2" {
				t.Errorf("Retry-After %q, want 2 (1.5s rounded up)", ra)
			}
		case http.StatusInternalServerError:
			if p, raw := decodeProblem(t, b); p.Type != ProblemServerError || p.Status != 500 || raw["errors"] != nil {
				t.Errorf("500 body %s", b)
			}
		default:
			t.Fatalf("GET: HTTP %d %s", resp.StatusCode, b)
		}
	}
	return out
}

func TestAPIFaultsDeterministicUnderSeed(t *testing.T) {
	tests := []struct {
		name   string
		faults Faults
		want   []int // statuses that must all appear
		kind   FaultKind
	}{
		{"server errors", Faults{ServerErrorRate: 0.4}, []int{200, 500}, FaultServerError},
		{"rate limits", Faults{RateLimitRate: 0.4, RetryAfter: 1500 * time.Millisecond}, []int{200, 429}, FaultRateLimit},
		{"both", Faults{ServerErrorRate: 0.3, RateLimitRate: 0.3, RetryAfter: 1500 * time.Millisecond}, []int{200, 429, 500}, FaultServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(seed int64) ([]int, Stats) {
				ts := startSim(t, Config{Seed: seed})
				code := ts.checkout(t, amountParams("1")).OrderCode
				if err := ts.SetFaults(tt.faults); err != nil {
					t.Fatal(err)
				}
				return getStatuses(t, ts, code, 40), ts.Stats()
			}
			a, stats := run(7)
			b, _ := run(7)
			c, _ := run(8)
			if !slices.Equal(a, b) {
				t.Errorf("seed 7 gave\n%v\n%v", a, b)
			}
			if slices.Equal(a, c) {
				t.Errorf("seeds 7 and 8 gave the same faults %v", a)
			}
			for _, status := range tt.want {
				if !slices.Contains(a, status) {
					t.Errorf("no %d among %v", status, a)
				}
			}
			faulted := 0
			for _, status := range a {
				if status != 200 {
					faulted++
				}
			}
			if n := stats.Faults[FaultServerError] + stats.Faults[FaultRateLimit]; n != int64(faulted) || stats.Faults[tt.kind] == 0 {
				t.Errorf("%d faulted answers, stats count %v", faulted, stats.Faults)
			}
			if stats.Gets != 40 || stats.GetsByOrder[stats.firstCode(t)] != 40 {
				t.Errorf("gets %d, by order %v: want 40 counted, faulted ones included", stats.Gets, stats.GetsByOrder)
			}
		})
	}
}

func (st Stats) firstCode(t *testing.T) string {
	t.Helper()
	if len(st.GetsByOrder) != 1 {
		t.Fatalf("want one order, stats have %d", len(st.GetsByOrder))
	}
	for code := range st.GetsByOrder {
		return code
	}
	return ""
}

func TestServerErrorOnCheckoutCreatesNothing(t *testing.T) {
	ts := startSim(t, Config{Faults: Faults{ServerErrorRate: 1}})
	resp, b := ts.call(t, http.MethodPost, "/paymentlink/checkout", testKey, []byte(`{"amount":5}`))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("HTTP %d %s, want 500", resp.StatusCode, b)
	}
	if st := ts.Stats(); st.Orders != 0 || st.Checkouts != 0 || st.Faults[FaultServerError] != 1 {
		t.Errorf("stats %+v", st)
	}
	if err := ts.SetFaults(Faults{}); err != nil { // stop the faults
		t.Fatal(err)
	}
	ts.checkout(t, amountParams("5"))
}

func TestHangingRequests(t *testing.T) {
	ts := startSim(t, Config{})
	code := ts.checkout(t, amountParams("1")).OrderCode

	t.Run("client gives up", func(t *testing.T) {
		if err := ts.SetFaults(Faults{HangRate: 1, HangDuration: time.Hour}); err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 100 * time.Millisecond}
		req, _ := http.NewRequest(http.MethodGet, ts.url+"/paymentlink/order/"+code, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("a hanging GET answered HTTP %d", resp.StatusCode)
		}
	})
	t.Run("answered after the hang", func(t *testing.T) {
		if err := ts.SetFaults(Faults{HangRate: 1, HangDuration: 30 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		o, _ := ts.getOrder(t, code)
		if elapsed := time.Since(start); elapsed < 30*time.Millisecond || o.OrderCode != code {
			t.Errorf("answered %s after %s, want the order after at least 30ms", o.OrderCode, elapsed)
		}
	})
	if n := ts.Stats().Faults[FaultHang]; n != 2 {
		t.Errorf("%d hangs counted, want 2", n)
	}
}

func TestCloseReleasesHangingRequests(t *testing.T) {
	s, err := New(Config{SecretKey: testKey, Seed: 3, Faults: Faults{HangRate: 1, HangDuration: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, u+"/paymentlink/checkout", strings.NewReader(`{"amount":1}`))
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		resp.Body.Close()
		answered <- answer{status: resp.StatusCode}
	}()
	for s.Stats().Faults[FaultHang] == 0 {
		time.Sleep(time.Millisecond) // polls; decides nothing
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case a := <-answered:
		if a.err == nil && a.status != http.StatusInternalServerError {
			t.Errorf("released request answered HTTP %d", a.status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release the hanging request")
	}
	if st := s.Stats(); st.Orders != 0 {
		t.Errorf("a request released by Close created %d orders", st.Orders)
	}
}

func TestGetLatency(t *testing.T) {
	ts := startSim(t, Config{Faults: Faults{GetLatency: 40 * time.Millisecond}})
	code := ts.checkout(t, amountParams("1")).OrderCode
	start := time.Now()
	ts.getOrder(t, code)
	if elapsed := time.Since(start); elapsed < 40*time.Millisecond {
		t.Errorf("GET answered after %s, want at least 40ms", elapsed)
	}
	if n := ts.Stats().Faults[FaultGetLatency]; n != 1 {
		t.Errorf("latency counted %d times, want 1", n)
	}
}

// webhookRun creates n orders, pays every other one, and returns what the
// receiver accepted, sorted, with the stats.
func webhookRun(t *testing.T, seed int64, n int, faults Faults) ([]string, Stats, []hook) {
	t.Helper()
	rcv := newReceiver(t, nil)
	ts := startSim(t, Config{Seed: seed, WebhookURL: rcv.url, WebhookSecret: testWebhookSecret, WebhookConcurrency: 4, Faults: faults})
	for i := range n {
		code := ts.checkout(t, ordersync.PaymentLinkParams{Amount: ptr(ordersync.MustAmount("2.00")), OrderReference: "ref-" + strconv.Itoa(i)}).OrderCode
		if i%2 == 0 {
			if _, err := ts.Pay(code, DefaultBuyer); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitIdle(t, ts)
	got := rcv.hooks()
	var bodies []string
	for _, h := range got {
		verifySignature(t, h)
		ev, err := ordersync.ParseEvent(h.body)
		if err != nil {
			t.Fatal(err)
		}
		// Payment metadata holds random payment ids: compare the event.
		bodies = append(bodies, string(ev.OrderID)+"/"+string(ev.SubscriptionID)+"/"+ev.OrderType+"/"+string(ev.Type))
	}
	slices.Sort(bodies)
	return bodies, ts.Stats(), got
}

func TestWebhookFaults(t *testing.T) {
	const orders = 30
	const events = orders + orders/2 // Created for each, SuccessPayment for half
	tests := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, st Stats, got []hook)
	}{
		{"duplicate", Faults{DuplicateRate: 1}, func(t *testing.T, st Stats, got []hook) {
			counts := map[string]int{}
			for _, h := range got {
				counts[string(h.body)]++
			}
			for body, n := range counts {
				if n != 2 {
					t.Errorf("%s delivered %d times, want 2", body, n)
				}
			}
			if len(got) != 2*events || st.Webhooks.Duplicated != events || st.Faults[FaultDuplicate] != events {
				t.Errorf("%d delivered, stats %+v", len(got), st.Webhooks)
			}
		}},
		{"drop half", Faults{DropRate: 0.5}, func(t *testing.T, st Stats, got []hook) {
			w := st.Webhooks
			if w.Dropped == 0 || w.Dropped == events || w.Dropped+w.Delivered != events || int64(len(got)) != w.Delivered {
				t.Errorf("%d delivered, stats %+v", len(got), w)
			}
		}},
		{"delay", Faults{DelayMax: 20 * time.Millisecond}, func(t *testing.T, st Stats, got []hook) {
			if len(got) != events || st.Webhooks.Delayed != events {
				t.Errorf("%d delivered, stats %+v", len(got), st.Webhooks)
			}
		}},
		{"other product", Faults{OtherProductRate: 1}, func(t *testing.T, st Stats, got []hook) {
			others := 0
			for _, h := range got {
				ev, _ := ordersync.ParseEvent(h.body)
				if ev.OrderType != OrderTypeOtherProduct {
					continue
				}
				others++
				id, _ := strconv.Atoi(string(ev.OrderID))
				if reason, _ := ev.Ignored(); reason != ordersync.IgnoreOtherProduct || id < firstForeignID {
					t.Errorf("other product event %s: ignored as %q", h.body, reason)
				}
			}
			if others != events || len(got) != 2*events || st.Faults[FaultOtherProduct] != events {
				t.Errorf("%d other-product events of %d, faults %v", others, len(got), st.Faults)
			}
		}},
		{"subscription", Faults{SubscriptionRate: 1}, func(t *testing.T, st Stats, got []hook) {
			subs := 0
			for _, h := range got {
				ev, _ := ordersync.ParseEvent(h.body)
				if !ev.Type.IsSubscription() {
					continue
				}
				subs++
				if reason, _ := ev.Ignored(); reason != ordersync.IgnoreSubscription || ev.SubscriptionID == "" || bytes.Contains(h.body, []byte(`"orderId"`)) {
					t.Errorf("subscription event %s: ignored as %q", h.body, reason)
				}
			}
			if subs != events || st.Faults[FaultSubscription] != events {
				t.Errorf("%d subscription events of %d", subs, len(got))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, st, got := webhookRun(t, 11, orders, tt.faults)
			tt.check(t, st, got)
			b, st2, _ := webhookRun(t, 11, orders, tt.faults)
			if !slices.Equal(a, b) || st.Webhooks.Delivered != st2.Webhooks.Delivered {
				t.Errorf("seed 11 delivered different events:\n%v\n%v", a, b)
			}
			if st.Webhooks.Pending != 0 || st.Webhooks.Queued != st.Webhooks.Delivered {
				t.Errorf("stats %+v", st.Webhooks)
			}
		})
	}
	t.Run("drop depends on the seed", func(t *testing.T) {
		a, _, _ := webhookRun(t, 11, orders, Faults{DropRate: 0.5})
		b, _, _ := webhookRun(t, 12, orders, Faults{DropRate: 0.5})
		if slices.Equal(a, b) {
			t.Errorf("seeds 11 and 12 dropped the same events")
		}
	})
}

func TestWebhookReorder(t *testing.T) {
	rcv := newReceiver(t, nil)
	ts := startSim(t, Config{WebhookURL: rcv.url, WebhookConcurrency: 1, Faults: Faults{ReorderRate: 1, ReorderDelay: 300 * time.Millisecond}})
	code := ts.checkout(t, amountParams("1")).OrderCode // Created is held back
	if err := ts.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Pay(code, DefaultBuyer); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ts)
	var types []ordersync.EventType
	for _, h := range rcv.hooks() {
		ev, _ := ordersync.ParseEvent(h.body)
		types = append(types, ev.Type)
	}
	if !slices.Equal(types, []ordersync.EventType{ordersync.EventSuccessPayment, ordersync.EventCreated}) {
		t.Errorf("arrival order %v, want SuccessPayment to overtake Created", types)
	}
	if st := ts.Stats(); st.Webhooks.Reordered != 1 || st.Faults[FaultReorder] != 1 {
		t.Errorf("stats %+v", st.Webhooks)
	}
}

func TestFaultsJSON(t *testing.T) {
	f := Faults{DuplicateRate: 0.1, ReorderRate: 0.2, ReorderDelay: 1500 * time.Millisecond, DelayMax: time.Second, DropRate: 0.05,
		GetLatency: 2 * time.Millisecond, ServerErrorRate: 0.01, RateLimitRate: 0.02, RetryAfter: 3 * time.Second,
		HangRate: 0.001, HangDuration: time.Minute, OtherProductRate: 0.3, SubscriptionRate: 0.4}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"reorderDelay":"1.5s"`) {
		t.Errorf("encoded %s", b)
	}
	var back Faults
	if err := json.Unmarshal(b, &back); err != nil || back != f {
		t.Errorf("round trip %+v (%v), want %+v", back, err, f)
	}
	var bad Faults
	if err := json.Unmarshal([]byte(`{"delayMax":"soon"}`), &bad); err == nil || !strings.Contains(err.Error(), "delayMax") {
		t.Errorf("bad duration: %v", err)
	}
	if err := (&Server{}).SetFaults(Faults{DropRate: -1}); err == nil || errors.Unwrap(err) == nil {
		t.Errorf("SetFaults(bad): %v", err)
	}
}
