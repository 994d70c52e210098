package child

import (
	"crypto/sha256"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/rusage"
)

// TestProcessCPU: the CPU time read from /proc for this process grows by
// about the CPU it burns, as getrusage sees it.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU time is read from /proc, only on Linux")
	}
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0, err := rusage.CPU()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
	}
	after, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self1, err := rusage.CPU()
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in 10 ms ticks, and the kernel may sample them.
	if got, want := after-before, self1-self0; got < want-50*time.Millisecond || got > want+50*time.Millisecond {
		t.Errorf("/proc says %s of CPU, getrusage %s", got, want)
	}
	if _, err := processCPU(1 << 30); err == nil {
		t.Error("processCPU of a process that does not exist succeeded")
	}
}
