//go:build unix

package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// holdLock takes the flock of dir's lock file on an open file of its own
// (as another process would) after writing pid into the file, and returns
// its release.
func holdLock(t *testing.T, dir string, pid int) func() {
	t.Helper()
	if err := os.WriteFile(lockPath(dir), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(lockPath(dir), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// TestUnlockReleasesACopiedDescriptor: a copy of the lock's descriptor
// still open after unlock, as a child another goroutine is starting holds
// one until it execs, does not keep the lock: a restart in this process
// takes it at once. Closing alone left it held, and a restart failed with
// "in use by another ordersync process" naming this one.
func TestUnlockReleasesACopiedDescriptor(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := syscall.Dup(lockDescriptor(t, dir))
	if err != nil {
		unlock()
		t.Fatal(err)
	}
	defer syscall.Close(copied)
	unlock()
	again, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after unlock, a copy of the descriptor still open: %v", err)
	}
	again()
}

// lockDescriptor is the descriptor of this process open on dir's lock
// file, found in /proc/self/fd.
func lockDescriptor(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to find the lock's descriptor in: %v", err)
	}
	want, err := filepath.EvalSymlinks(lockPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == want {
			fd, _ := strconv.Atoi(e.Name())
			return fd
		}
	}
	t.Fatalf("no descriptor of this process is open on %s", want)
	return -1
}

// TestLockRefusesAnotherProcess: a held lock is refused at once with a
// LockedError naming the process its file names, another process or this
// one (two servers in one process).
func TestLockRefusesAnotherProcess(t *testing.T) {
	for _, tt := range []struct {
		name string
		pid  int
	}{
		{"another process", os.Getppid()},
		{"this process, held on", os.Getpid()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) { lockRefused(t, dir, tt.pid) })
		})
	}
}

// lockRefused checks that Lock of dir, held by pid, is refused at once
// (in synctest's time), naming pid.
func lockRefused(t *testing.T, dir string, pid int) {
	defer holdLock(t, dir, pid)()
	start := time.Now()
	unlock, err := Lock(dir)
	if waited := time.Since(start); waited != 0 {
		t.Errorf("Lock refused after %v, want at once", waited)
	}
	var locked *LockedError
	if !errors.As(err, &locked) {
		if err == nil {
			unlock()
		}
		t.Fatalf("Lock of a directory held by PID %d: %v, want a LockedError", pid, err)
	}
	if locked.PID != pid || locked.Dir != dir {
		t.Errorf("LockedError names PID %d and %s, want %d and %s", locked.PID, locked.Dir, pid, dir)
	}
}
