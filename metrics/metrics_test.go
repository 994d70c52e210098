package metrics

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync/internal/build"
)

// TestRegisterCollector: a second registration of the same description returns the
// collector already registered; a clash of label names is an error.
func TestRegisterCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "ordersync_test_total", Help: "test"}
	first, err := registerCollector(reg, prometheus.NewCounterVec(opts, []string{"kind"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := registerCollector(reg, prometheus.NewCounterVec(opts, []string{"kind"}))
	if err != nil || second != first {
		t.Fatalf("second registration: %v, same collector %v", err, second == first)
	}
	second.WithLabelValues("a").Inc()
	if _, err := registerCollector(reg, prometheus.NewCounterVec(opts, []string{"other"})); err == nil {
		t.Fatal("a clash of label names registered")
	}
}

// TestRegisterAll: a stage's fields are registered in one call; a second
// stage on the same registry gets the first one's collectors in its
// fields; a nil registerer registers nothing; a clash is an error.
func TestRegisterAll(t *testing.T) {
	type stage struct {
		events  *prometheus.CounterVec
		pending prometheus.Gauge
	}
	newStage := func(reg prometheus.Registerer) (*stage, error) {
		s := &stage{
			events:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersync_test_events_total", Help: "test"}, []string{"kind"}),
			pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersync_test_pending", Help: "test"}),
		}
		return s, RegisterAll(reg, Of(&s.events), Of(&s.pending))
	}
	reg := prometheus.NewRegistry()
	first, err := newStage(reg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := newStage(reg)
	if err != nil {
		t.Fatal(err)
	}
	if second.events != first.events || second.pending != first.pending {
		t.Error("the second stage does not share the first one's collectors")
	}
	if _, err := newStage(nil); err != nil {
		t.Errorf("nil registerer: %v", err)
	}
	clash := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersync_test_events_total", Help: "test"}, []string{"other"})
	if err := RegisterAll(reg, Of(&clash)); err == nil {
		t.Error("a clash of label names registered")
	}
}

// TestRegistryExportsBuildInfo: every process's registry says which build
// it runs, as `ordersync version` names it.
func TestRegistryExportsBuildInfo(t *testing.T) {
	mfs, err := NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ordersync_build_info" {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%d series of ordersync_build_info, want 1", len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		b := build.Read()
		if labels["go"] != runtime.Version() || labels["version"] != b.Version || labels["commit"] != b.Commit || len(labels) != 3 {
			t.Errorf("ordersync_build_info labels %v, want version %s, commit %s and go %s (what `ordersync version` prints)",
				labels, b.Version, b.Commit, runtime.Version())
		}
		if v := m.GetGauge().GetValue(); v != 1 {
			t.Errorf("ordersync_build_info = %v, want 1", v)
		}
		return
	}
	t.Fatal("ordersync_build_info is not exported")
}
