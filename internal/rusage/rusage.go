// Package rusage reads the CPU time the process has used, for benchmarks
// that report CPU per operation: on a shared machine the figure that
// varies least between runs, and the one that adds up across stages.
package rusage

import (
	"fmt"
	"syscall"
	"time"
)

// CPU is the CPU time, user and system, the process used so far: all its
// goroutines', whatever they serve.
func CPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// TB is the part of testing.TB a Meter uses (this package is in the binary,
// so it does not import testing).
type TB interface {
	Helper()
	Fatal(args ...any)
}

// Meter adds up the process's CPU time while it runs, for a benchmark that
// reports CPU per operation. Like the benchmark's timer it can be stopped
// around set-up work.
type Meter struct {
	tb      TB
	used    time.Duration
	since   time.Duration
	running bool
}

// Start returns a running Meter.
func Start(tb TB) *Meter {
	m := &Meter{tb: tb}
	m.Start()
	return m
}

// Start resumes a stopped Meter.
func (m *Meter) Start() {
	if m.running {
		return
	}
	m.since, m.running = m.read(), true
}

// Stop pauses the Meter.
func (m *Meter) Stop() {
	if !m.running {
		return
	}
	m.used += m.read() - m.since
	m.running = false
}

// Used is the CPU time counted so far.
func (m *Meter) Used() time.Duration {
	if m.running {
		return m.used + m.read() - m.since
	}
	return m.used
}

// Report reports the CPU time counted so far in microseconds per op, for
// ops operations, as the metric unit (say "cpu-µs/order").
func (m *Meter) Report(b interface{ ReportMetric(float64, string) }, ops int, unit string) {
	if ops > 0 {
		b.ReportMetric(float64(m.Used().Microseconds())/float64(ops), unit)
	}
}

func (m *Meter) read() time.Duration {
	m.tb.Helper()
	d, err := CPU()
	if err != nil {
		m.tb.Fatal(err)
	}
	return d
}
