package datadir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	collect "github.com/ordersync/ordersync/metrics"
)

// Watermark is the free space a filesystem holding ordersync's data keeps:
// below it webhooks are refused before anything fails to write, so that
// SQLite and JetStream always have room to checkpoint and compact.
type Watermark struct {
	// Bytes, when Percent is 0: the free bytes kept.
	Bytes uint64
	// Percent, when positive: the share of the filesystem kept free.
	Percent float64
	// Off: no watermark.
	Off bool
}

// DefaultWatermark keeps the lesser of 1 GiB and 5% of the filesystem
// free: a large disk is not held to 5%, a small one not to a gigabyte.
var DefaultWatermark = Watermark{}

// defaultWatermarkBytes and defaultWatermarkPercent make DefaultWatermark.
const (
	defaultWatermarkBytes   = 1 << 30
	defaultWatermarkPercent = 5
)

// ParseWatermark reads the min_free_space setting: "" for the default, "0"
// or "off" for none, a percentage ("5%") or a size ("1GiB", "512MiB",
// "500MB", or bytes).
func ParseWatermark(s string) (Watermark, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		return DefaultWatermark, nil
	case "0", "off":
		return Watermark{Off: true}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v >= 100 || math.IsNaN(v) {
			return Watermark{}, fmt.Errorf("%q: want a percentage between 0 and 100, like 5%%", s)
		}
		return Watermark{Percent: v}, nil
	}
	n, err := parseSize(s)
	if err != nil {
		return Watermark{}, err
	}
	return Watermark{Bytes: n}, nil
}

var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

func parseSize(s string) (uint64, error) {
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	v, err := strconv.ParseFloat(s[:i], 64)
	if !ok || err != nil || v < 0 || v*float64(unit) >= math.MaxUint64/2 {
		return 0, fmt.Errorf("%q: want a size like 1GiB, 512MiB or 500MB, or a percentage like 5%%", s)
	}
	return uint64(v * float64(unit)), nil
}

// For is the free bytes kept on a filesystem of total bytes.
func (w Watermark) For(total uint64) uint64 {
	switch {
	case w.Off:
		return 0
	case w.Percent > 0:
		return uint64(float64(total) * w.Percent / 100)
	case w.Bytes > 0:
		return w.Bytes
	}
	return min(defaultWatermarkBytes, total*defaultWatermarkPercent/100)
}

// String is the setting's form.
func (w Watermark) String() string {
	switch {
	case w.Off:
		return "off"
	case w.Percent > 0:
		return strconv.FormatFloat(w.Percent, 'f', -1, 64) + "%"
	case w.Bytes > 0:
		return strconv.FormatUint(w.Bytes, 10)
	}
	return "the lesser of 1GiB and 5%"
}

// Usage is a filesystem's free and total bytes, as an unprivileged process
// may use them.
type Usage struct{ Free, Total uint64 }

// Statfs reads the usage of the filesystem holding a path.
type Statfs func(path string) (Usage, error)

// SpaceConfig configures a Space.
type SpaceConfig struct {
	// Dirs names the directories to watch by a short fixed label (data,
	// jetstream, database), the label of their metrics. Required.
	Dirs map[string]string
	// Watermark is the free space kept on each.
	Watermark Watermark
	// Interval is how often the free space is read; default 500ms. A
	// statfs costs microseconds; at this interval a burst cannot write
	// much past the watermark before the receiver refuses.
	Interval time.Duration
	// Statfs reads a filesystem's usage; default the system's statfs.
	Statfs     Statfs
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

func (c *SpaceConfig) withDefaults() {
	if c.Interval == 0 {
		c.Interval = 500 * time.Millisecond
	}
	if c.Statfs == nil {
		c.Statfs = statfs
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *SpaceConfig) validate() error {
	if len(c.Dirs) == 0 {
		return errors.New("disk space: Dirs is required")
	}
	if c.Interval < 0 {
		return fmt.Errorf("disk space: Interval %s must be positive", c.Interval)
	}
	return nil
}

// LowSpaceError says a watched directory's filesystem is below the
// watermark.
type LowSpaceError struct {
	Label, Dir      string
	Free, Watermark uint64
}

func (e *LowSpaceError) Error() string {
	return fmt.Sprintf("%s directory %s is low on disk space: %s free, below the watermark of %s (min_free_space)",
		e.Label, e.Dir, formatBytes(e.Free), formatBytes(e.Watermark))
}

func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 2, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatUint(n, 10) + " B"
}

// Space watches the free space of the filesystems holding the data: below
// the watermark on any of them it is Low until free space is back a
// quarter above it (the hysteresis keeps a filesystem hovering at the
// watermark from flapping the receiver).
type Space struct {
	cfg    SpaceConfig
	labels []string
	m      spaceMetrics
	logger *slog.Logger

	mu  sync.Mutex
	low map[string]*LowSpaceError // by label, while below
}

type spaceMetrics struct {
	free, watermark, low *prometheus.GaugeVec
	errors               prometheus.Counter
}

// NewSpace reads every directory's free space once and returns the
// watcher; Run keeps reading.
func NewSpace(cfg SpaceConfig) (*Space, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Space{cfg: cfg, logger: cfg.Logger.With("component", "disk"), low: map[string]*LowSpaceError{}}
	for label := range cfg.Dirs {
		s.labels = append(s.labels, label)
	}
	sort.Strings(s.labels)
	s.m = spaceMetrics{
		free: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_disk_free_bytes",
			Help: "Free bytes (for an unprivileged process) on the filesystem of each data directory.",
		}, []string{"dir"}),
		watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_disk_watermark_bytes",
			Help: "The free bytes kept on the filesystem of each data directory (min_free_space); 0 when off.",
		}, []string{"dir"}),
		low: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ordersync_disk_low",
			Help: "1 while a data directory's filesystem is below its watermark and webhooks are refused, else 0.",
		}, []string{"dir"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_disk_statfs_errors_total",
			Help: "Failed reads of a data directory's free space.",
		}),
	}
	if err := collect.RegisterAll(cfg.Registerer, collect.Of(&s.m.free), collect.Of(&s.m.watermark), collect.Of(&s.m.low), collect.Of(&s.m.errors)); err != nil {
		return nil, fmt.Errorf("disk space: register metrics: %w", err)
	}
	s.Poll()
	return s, nil
}

// Run reads the free space every Interval until ctx ends.
func (s *Space) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Poll()
		}
	}
}

// Poll reads every directory's free space once. A directory whose
// filesystem cannot be read keeps its last state. It logs when webhooks
// start or stop being refused, once for all the directories (they often
// share a filesystem).
func (s *Space) Poll() {
	before := s.Low()
	for _, label := range s.labels {
		dir := s.cfg.Dirs[label]
		u, err := s.cfg.Statfs(dir)
		if err != nil {
			s.m.errors.Inc()
			continue
		}
		mark := s.cfg.Watermark.For(u.Total)
		s.m.free.WithLabelValues(label).Set(float64(u.Free))
		s.m.watermark.WithLabelValues(label).Set(float64(mark))
		s.mu.Lock()
		was := s.low[label]
		var now *LowSpaceError
		switch {
		case mark == 0:
		case u.Free < mark, was != nil && u.Free < mark+mark/4:
			now = &LowSpaceError{Label: label, Dir: dir, Free: u.Free, Watermark: mark}
		}
		if now != nil {
			s.low[label] = now
		} else {
			delete(s.low, label)
		}
		s.mu.Unlock()
		lowValue := 0.0
		if now != nil {
			lowValue = 1
		}
		s.m.low.WithLabelValues(label).Set(lowValue)
	}
	var low *LowSpaceError
	switch after := s.Low(); {
	case before == nil && errors.As(after, &low):
		s.logger.Warn("disk space below the watermark: webhooks are refused with 503 until it is back",
			"dir", low.Label, "path", low.Dir, "free_bytes", low.Free, "watermark_bytes", low.Watermark)
	case before != nil && after == nil:
		s.logger.Info("disk space back above the watermark: webhooks accepted again")
	}
}

// Low is nil while every directory has room, else a *LowSpaceError for
// one that has not.
func (s *Space) Low() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, label := range s.labels {
		if e := s.low[label]; e != nil {
			return e
		}
	}
	return nil
}
