package rusage

import (
	"crypto/sha256"
	"testing"
	"time"
)

// TestCPUCountsWork: hashing for 50 ms of wall time on one goroutine shows
// up as about that much CPU.
func TestCPUCountsWork(t *testing.T) {
	before, err := CPU()
	if err != nil {
		t.Fatal(err)
	}
	burn(50 * time.Millisecond)
	after, err := CPU()
	if err != nil {
		t.Fatal(err)
	}
	// The machine may be shared: the goroutine can be off its core for a
	// while, so only a floor well below the wall time is certain.
	if used := after - before; used < 10*time.Millisecond {
		t.Errorf("CPU rose by %s over 50 ms of hashing, want at least 10ms", used)
	}
}

// TestMeterCountsOnlyWhileRunning: work done while the Meter is stopped does
// not count, work done while it runs does.
func TestMeterCountsOnlyWhileRunning(t *testing.T) {
	m := Start(t)
	burn(50 * time.Millisecond)
	m.Stop()
	counted := m.Used()
	if counted < 10*time.Millisecond {
		t.Errorf("counted %s over 50 ms of hashing, want at least 10ms", counted)
	}
	burn(50 * time.Millisecond)
	if got := m.Used(); got != counted {
		t.Errorf("a stopped Meter went from %s to %s", counted, got)
	}
	m.Start()
	burn(50 * time.Millisecond)
	if got := m.Used(); got < counted+10*time.Millisecond {
		t.Errorf("a restarted Meter counted %s, want at least %s", got, counted+10*time.Millisecond)
	}
	r := reportRecorder{}
	m.Report(&r, 4, "cpu-µs/op")
	if r.unit != "cpu-µs/op" || r.value < float64(counted.Microseconds())/4 {
		t.Errorf("Report gave %v %q, want at least %v", r.value, r.unit, float64(counted.Microseconds())/4)
	}
}

type reportRecorder struct {
	value float64
	unit  string
}

func (r *reportRecorder) ReportMetric(v float64, unit string) { r.value, r.unit = v, unit }

// burn hashes on this goroutine for d of wall time.
func burn(d time.Duration) {
	buf := make([]byte, 1<<16)
	for start := time.Now(); time.Since(start) < d; {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
	}
}
