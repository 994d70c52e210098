package rusage

import (
	"crypto/sha256"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestCPUCountsWork: hashing for 50 ms of one thread's CPU time shows up
// as at least that much of the process's.
func TestCPUCountsWork(t *testing.T) {
	before, err := CPU()
	if err != nil {
		t.Fatal(err)
	}
	burn(t, 50*time.Millisecond)
	after, err := CPU()
	if err != nil {
		t.Fatal(err)
	}
	if used := after - before; used < 10*time.Millisecond {
		t.Errorf("CPU rose by %s over 50 ms of hashing, want at least 10ms", used)
	}
}

// TestMeterCountsOnlyWhileRunning: work done while the Meter is stopped does
// not count, work done while it runs does.
func TestMeterCountsOnlyWhileRunning(t *testing.T) {
	m := Start(t)
	burn(t, 50*time.Millisecond)
	m.Stop()
	counted := m.Used()
	if counted < 10*time.Millisecond {
		t.Errorf("counted %s over 50 ms of hashing, want at least 10ms", counted)
	}
	burn(t, 50*time.Millisecond)
	if got := m.Used(); got != counted {
		t.Errorf("a stopped Meter went from %s to %s", counted, got)
	}
	m.Start()
	burn(t, 50*time.Millisecond)
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

// burn hashes on one thread until that thread has used d of CPU time, as
// the kernel counts it for the thread alone: however busy the machine, the
// process has then used at least d, which a wall-clock burn cannot promise.
func burn(t *testing.T, d time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 1<<16)
	for start := threadCPU(t); threadCPU(t)-start < d; {
		for range 16 {
			sum := sha256.Sum256(buf)
			buf[0] = sum[0]
		}
	}
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1

// threadCPU is the CPU time the calling thread has used.
func threadCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		t.Skipf("getrusage(RUSAGE_THREAD): %v (Linux only)", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
