package testenv

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WaitFor polls cond every 10 ms until it holds, and fails the test naming
// what it waited for when timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Await(t, timeout, 10*time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	})
}

// Await calls check every interval until it returns nil, and fails the
// test with check's last error when timeout passes first: the error says
// how far from done things stood. A check that costs a query or a scan
// takes a longer interval, so that the wait does not load the machine
// the pipeline under test runs on.
func Await(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// MetricSum sums the series name in g whose labels match labels (a label
// not named matches any value): a counter's or a gauge's value, a
// histogram's count; 0 when there is no such series.
func MetricSum(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return sum
	}
	return 0
}
