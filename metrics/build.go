package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// newBuildInfo is ordersync_build_info{version,commit,go}, always 1: every
// process exports it whatever its roles, so dashboards list their jobs and
// instances from it and a query can join a process's series to its build.
func newBuildInfo() prometheus.Collector {
	version, commit := "(devel)", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ordersync_build_info",
		Help:        "Always 1; the labels name the build of this process: its module version, VCS commit and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "go": runtime.Version()},
	})
	g.Set(1)
	return g
}
