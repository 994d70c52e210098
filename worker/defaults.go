package worker

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// defaultDeps fills in what every stage's config may leave out, the same
// way for each: a registry of its own (so collectors register and go
// nowhere), a logger that discards, and time.Now. reg is nil for a config
// without a registerer, clock for one without a clock.
func defaultDeps(reg *prometheus.Registerer, logger **slog.Logger, clock *func() time.Time) {
	if reg != nil && *reg == nil {
		*reg = prometheus.NewRegistry()
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
	if clock != nil && *clock == nil {
		*clock = time.Now
	}
}
