package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestConcurrentUse drives the API, the control API, fault switching and
// webhook delivery from many goroutines at once; run it with -race.
func TestConcurrentUse(t *testing.T) {
	rcv := newReceiver(t, func(n int) int {
		if n%7 == 0 {
			return 503 // some retries in the mix
		}
		return 200
	})
	ts := startSim(t, Config{WebhookURL: rcv.url, WebhookSecret: testWebhookSecret, WebhookConcurrency: 4, WebhookBackoff: time.Millisecond})
	ts.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 10 * time.Second}

	const workers, perWorker = 16, 15
	var paid, cancelled atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			if err := clientSession(ts, w, perWorker, &paid, &cancelled); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() { // switch harmless faults on and off meanwhile
		for i := range 20 {
			if err := ts.SetFaults(Faults{DuplicateRate: float64(i%2) * 0.5}); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Millisecond) // spreads the switches over the sessions; decides nothing
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitIdle(t, ts)

	st := ts.Stats()
	const total = workers * perWorker
	if st.Orders != total || st.Checkouts != total || st.Gets != 2*total ||
		st.OrdersByStatus[ordersync.StatusPaid] != int(paid.Load()) || st.OrdersByStatus[ordersync.StatusCancelled] != int(cancelled.Load()) {
		t.Errorf("stats: %d orders, %d checkouts, %d gets, by status %v", st.Orders, st.Checkouts, st.Gets, st.OrdersByStatus)
	}
	var sum int64
	for _, n := range st.GetsByOrder {
		sum += n
	}
	w := st.Webhooks
	if sum != st.Gets || w.Events != 2*total || w.Queued != w.Events+w.Duplicated || w.Delivered != w.Queued || w.Pending != 0 || int64(len(rcv.hooks())) != w.Delivered {
		t.Errorf("gets by order sum %d; webhooks %+v, receiver accepted %d", sum, w, len(rcv.hooks()))
	}
	seen := map[string]bool{}
	for _, o := range ts.Orders() {
		if seen[o.OrderCode] {
			t.Errorf("code %s repeated", o.OrderCode)
		}
		seen[o.OrderCode] = true
	}
}

// clientSession creates n orders, fetches, pays or cancels, and fetches
// each again.
func clientSession(ts *testSim, w, n int, paid, cancelled *atomic.Int64) error {
	for i := range n {
		params, _ := json.Marshal(ordersync.PaymentLinkParams{
			LineItems: []ordersync.LineItemParams{{SKU: "COMBO-CLASICO", Quantity: i + 1}},
			Metadata:  []ordersync.MetadataEntry{{Name: "worker", Value: strconv.Itoa(w)}},
		})
		var res ordersync.PaymentLinkResult
		if err := ts.doJSON(http.MethodPost, "/paymentlink/checkout", testKey, params, &res); err != nil {
			return err
		}
		var o ordersync.Order
		if err := ts.doJSON(http.MethodGet, "/paymentlink/order/"+res.OrderCode, testKey, nil, &o); err != nil {
			return err
		}
		if want := ordersync.MustAmount("6.50").MulInt(int64(i + 1)); !o.Total.Equal(want) {
			return fmt.Errorf("order %s total %s, want %s", o.OrderCode, o.Total, want)
		}
		action, counter := "pay", paid
		if i%3 == 0 {
			action, counter = "cancel", cancelled
		}
		if err := ts.doJSON(http.MethodPost, "/_sim/orders/"+res.OrderCode+"/"+action, "", nil, &o); err != nil {
			return err
		}
		counter.Add(1)
		if err := ts.doJSON(http.MethodGet, "/paymentlink/order/"+res.OrderCode, testKey, nil, &o); err != nil {
			return err
		}
		if i%5 == 0 {
			ts.Stats()
			ts.Orders()
		}
	}
	return nil
}

// manyOrdersParams is a link of two line items and a metadata entry, as
// the load generator creates them.
var manyOrdersParams = ordersync.PaymentLinkParams{
	LineItems: []ordersync.LineItemParams{{SKU: "COMBO-CLASICO", Quantity: 2}, {SKU: "CAFE-ORGANICO-1LB", Quantity: 1}},
	Metadata:  []ordersync.MetadataEntry{{Name: "numero_orden", Value: "A-1"}},
}

// holdOrders creates n orders, each with a queued webhook (delivery is not
// started), and returns the heap they hold per order.
func holdOrders(tb testing.TB, s *Server, n int) int64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	params := manyOrdersParams
	for i := range n {
		params.OrderReference = "ped_" + strconv.Itoa(i)
		if _, err := s.CreatePaymentLink(params); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(n)
}

func newHoldingSim(tb testing.TB) *Server {
	tb.Helper()
	// Delivery is not started: every Created webhook stays queued.
	s, err := New(Config{SecretKey: testKey, Seed: 9, WebhookURL: "http://127.0.0.1:1/hooks", WebhookSecret: testWebhookSecret})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestHoldsManyOrders creates 10,000 orders, each with a queued webhook,
// and checks that they are all held, distinct, and served. What each
// order costs to hold at the load generator's 100,000 is
// BenchmarkHoldOrders.
func TestHoldsManyOrders(t *testing.T) {
	const n = 10_000
	s := newHoldingSim(t)
	defer s.Close()
	perOrder := holdOrders(t, s, n)
	t.Logf("%d orders: %d bytes of heap per order (detail, cached JSON, queued webhook)", n, perOrder)

	orders := s.Orders()
	if len(orders) != n {
		t.Fatalf("%d orders held, want %d", len(orders), n)
	}
	codes := make(map[string]bool, n)
	for i, o := range orders {
		if codes[o.OrderCode] || o.OrderID != ordersync.ID(strconv.Itoa(FirstOrderID+i)) || o.Total.String() != "25.99" {
			t.Fatalf("order %d: code %s (repeated %v), id %s, total %s", i, o.OrderCode, codes[o.OrderCode], o.OrderID, o.Total)
		}
		codes[o.OrderCode] = true
	}
	st := s.Stats()
	if st.Orders != n || st.Webhooks.Pending != int64(n) || st.OrdersByStatus[ordersync.StatusPending] != n {
		t.Errorf("stats: %d orders, %d webhooks pending, by status %v", st.Orders, st.Webhooks.Pending, st.OrdersByStatus)
	}
	u, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testSim{Server: s, url: u, client: &http.Client{Timeout: 10 * time.Second}}
	for _, i := range []int{0, n / 2, n - 1} {
		o, raw := ts.getOrder(t, orders[i].OrderCode)
		want, _ := json.Marshal(orders[i])
		if string(raw) != string(want) || o.OrderReference != "ped_"+strconv.Itoa(i) {
			t.Errorf("GET order %d:\n%s\nwant\n%s", i, raw, want)
		}
	}
}

// BenchmarkHoldOrders creates 100,000 orders per op, each with a queued
// webhook, in a fresh simulator, and reports the heap each order holds
// (detail, cached JSON, queued webhook): the load generator's runs hold
// that many.
func BenchmarkHoldOrders(b *testing.B) {
	const n = 100_000
	var perOrder int64
	for b.Loop() {
		s := newHoldingSim(b)
		perOrder = holdOrders(b, s, n)
		if st := s.Stats(); st.Orders != n || st.Webhooks.Pending != n {
			b.Fatalf("stats: %d orders, %d webhooks pending, want %d", st.Orders, st.Webhooks.Pending, n)
		}
		s.Close()
	}
	b.ReportMetric(float64(perOrder), "heap-B/order")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/order")
}

// TestDeliveryNeverBlocksTheAPI stalls the webhook receiver and checks that
// checkouts and changes still answer at once while their events queue up.
func TestDeliveryNeverBlocksTheAPI(t *testing.T) {
	release := make(chan struct{})
	rcv := newReceiver(t, func(int) int {
		<-release
		return 200
	})
	t.Cleanup(func() { close(release) })
	ts := startSim(t, Config{WebhookURL: rcv.url, WebhookConcurrency: 1})
	const n = 300
	for range n {
		code := ts.checkout(t, amountParams("1")).OrderCode
		if _, err := ts.Pay(code, DefaultBuyer); err != nil {
			t.Fatal(err)
		}
	}
	if st := ts.Stats(); st.Checkouts != n || st.Webhooks.Pending != 2*n || st.Webhooks.Delivered != 0 {
		t.Errorf("stats: %d checkouts, webhooks %+v", st.Checkouts, st.Webhooks)
	}
}
