package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync/internal/build"
)

// newBuildInfo is ordersync_build_info{version,commit,go}, always 1: every
// process exports it whatever its roles, so dashboards list their jobs and
// instances from it and a query can join a process's series to its build.
// Its labels are what `ordersync version` prints.
func newBuildInfo() prometheus.Collector {
	b := build.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ordersync_build_info",
		Help:        "Always 1; the labels name the build of this process: its version (the release's, else the module's), commit and Go version.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "go": b.Go},
	})
	g.Set(1)
	return g
}
