//go:build !linux

package child

import (
	"errors"
	"syscall"
	"time"
)

// childSysProcAttr: only Linux can tie the child's life to the parent's.
func childSysProcAttr() *syscall.SysProcAttr { return nil }

// peakRSS is read from /proc, which only Linux has.
func peakRSS(int) (int64, error) { return 0, errors.New("peak RSS: only measured on Linux") }

// processCPU is read from /proc, which only Linux has.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("CPU time: only measured on Linux")
}

// listensOn cannot tell which process holds a port without /proc: it
// trusts the answer on the port.
func listensOn(int, int) (bool, error) { return true, nil }
