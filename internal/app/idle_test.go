package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// TestIdleServeLongPolls: serve with nothing to do keeps one long poll open
// on each JetStream consumer (the workers' events, an endpoint's order
// events) instead of asking again every few milliseconds: over an idle
// window it sends at most a request or two per consumer, where short pulls
// sent about a hundred a second each. The test waits out its window, since
// what it proves is that requests were not sent within it; no speed
// decides it (a slow machine sends fewer requests, not more).
// docs/benchmarks.md "Idle cost" measures the whole process.
func TestIdleServeLongPolls(t *testing.T) {
	st := startTestStack(t, StackOptions{Configure: func(c *Config) {
		c.Endpoints = []EndpointConfig{{ID: "erp", URL: "http://127.0.0.1:9/erp",
			Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: []string{"order.paid"}}}
	}})
	reg := st.Program.Registry()
	pulls := func(stream string) float64 {
		return counterValue(t, reg, "ordersync_queue_pull_requests_total", "stream", stream)
	}
	// Both consumers are waiting once each has sent its first long poll
	// (after one request for what is there now).
	testenv.Await(t, 10*time.Second, 10*time.Millisecond, func() error {
		if e, o := pulls("events"), pulls("orders"); e < 2 || o < 2 {
			return fmt.Errorf("pull requests %v (events) and %v (order events), want each consumer polling", e, o)
		}
		return nil
	})
	events, orders := pulls("events"), pulls("orders")
	const window = time.Second
	// The window in which nothing may be asked again. Its subject is the
	// consumers' own long-poll expiry on the real JetStream server, which
	// only real time moves.
	time.Sleep(window)
	// A poll that ends in the window is renewed with two requests.
	if got := pulls("events") - events; got > 2 {
		t.Errorf("the idle workers sent %v pull requests in %s, want at most 2 (one long poll)", got, window)
	}
	if got := pulls("orders") - orders; got > 2 {
		t.Errorf("the idle endpoint's deliveries sent %v pull requests in %s, want at most 2 (one long poll)", got, window)
	}
}

// counterValue is the value of the counter series of name whose labels
// include every pair of labels, or 0 when there is none.
func counterValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.Metric {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
