//go:build unix

package export_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// measureLock takes the lock file ORDERSYNC_BENCH_LOCK names, if set, and
// gives every thread of the process the default priority: the mirror is
// filled by a process started with nice beside other work, and only the
// export itself is the measurement that holds the machine's shared lock.
// The returned func releases the lock.
func measureLock(t *testing.T) func() {
	t.Helper()
	path := os.Getenv("ORDERSYNC_BENCH_LOCK")
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// On Linux a nice value is per thread.
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil {
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 0)
			}
		}
	}
	return func() { f.Close() }
}
