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
	buf := make([]byte, 1<<16)
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
	}
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
