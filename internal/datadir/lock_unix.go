//go:build unix

package datadir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Lock takes an exclusive flock on the data directory's lock file
// and writes this process's PID into it. The kernel releases the lock when
// the process ends, however it ends (kill -9 included), so no stale lock
// survives a crash. unlock releases it.
//
// A lock this process held and released may still be held for a moment
// after: a child another goroutine was starting then holds a copy of the
// descriptor until it execs (it closes on exec, not on fork), and a flock
// is held until the last descriptor sharing it closes. So a lock whose
// file names this process is tried again for up to forkWindow before Lock
// gives up; one that names another process is refused at once.
func Lock(dir string) (unlock func(), err error) {
	path := lockPath(dir)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	deadline := time.Now().Add(forkWindow)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK) && holder(path) == os.Getpid() && time.Now().Before(deadline):
			time.Sleep(10 * time.Millisecond)
			continue
		}
		break
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, &LockedError{Dir: dir, PID: holder(path)}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// forkWindow is how long Lock waits out a lock that names this process:
// far longer than a child takes from fork to exec.
const forkWindow = 500 * time.Millisecond

// holder is the PID the lock file at path names, 0 when it names none.
func holder(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
