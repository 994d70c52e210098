package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRegister: a second registration of the same description returns the
// collector already registered; a clash of label names is an error.
func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "ordersync_test_total", Help: "test"}
	first, err := Register(reg, prometheus.NewCounterVec(opts, []string{"kind"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, prometheus.NewCounterVec(opts, []string{"kind"}))
	if err != nil || second != first {
		t.Fatalf("second registration: %v, same collector %v", err, second == first)
	}
	second.WithLabelValues("a").Inc()
	if _, err := Register(reg, prometheus.NewCounterVec(opts, []string{"other"})); err == nil {
		t.Fatal("a clash of label names registered")
	}
}
