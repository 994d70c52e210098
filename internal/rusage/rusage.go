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
