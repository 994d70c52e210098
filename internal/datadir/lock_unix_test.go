//go:build unix

package datadir

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// holdLock takes the flock of dir's lock file on a descriptor of its own
// (as a child forked while this process held the lock has one) after
// writing pid into the file, and returns its release.
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

// TestLockWaitsOutItsOwnRelease: a lock that names this process but is
// still held, as a child being started holds it until it execs, is taken
// once that holder lets go; without the wait, a restart in the same
// process failed with "in use by another ordersync process" naming
// itself, whenever another goroutine started a child at that moment.
func TestLockWaitsOutItsOwnRelease(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		release := holdLock(t, dir, os.Getpid())
		go func() {
			time.Sleep(100 * time.Millisecond) // the child's exec
			release()
		}()
		unlock, err := Lock(dir)
		if err != nil {
			t.Fatalf("Lock while this process's own copy is released 100 ms later: %v", err)
		}
		unlock()
	})
}

// TestLockRefusesAnotherProcess: a lock that names another process is
// refused with a LockedError naming it, and so is one naming this process
// that is not released within forkWindow (two servers in one process).
func TestLockRefusesAnotherProcess(t *testing.T) {
	for _, tt := range []struct {
		name string
		pid  int
		wait time.Duration
	}{
		{"another process", os.Getppid(), 0},
		{"this process, held on", os.Getpid(), forkWindow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) { lockRefused(t, dir, tt.pid, tt.wait) })
		})
	}
}

// lockRefused checks that Lock of dir, held by pid, is refused after
// wait, naming pid.
func lockRefused(t *testing.T, dir string, pid int, wait time.Duration) {
	defer holdLock(t, dir, pid)()
	start := time.Now()
	unlock, err := Lock(dir)
	if waited := time.Since(start); waited < wait || waited > wait+50*time.Millisecond {
		t.Errorf("Lock refused after %v, want %v", waited, wait)
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
