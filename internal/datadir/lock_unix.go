//go:build unix

package datadir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Lock takes an exclusive flock on the data directory's lock file
// and writes this process's PID into it. The kernel releases the lock when
// the process ends, however it ends (kill -9 included), so no stale lock
// survives a crash. unlock releases it.
//
// unlock releases the flock before it closes the file: a child another
// goroutine is starting holds a copy of every descriptor until it execs
// (they close on exec, not on fork), and closing releases a flock only
// with the last descriptor that shares it, so a restart in this process
// would find its own lock still held.
func Lock(dir string) (unlock func(), err error) {
	path := lockPath(dir)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
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
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// holder is the PID the lock file at path names, 0 when it names none.
func holder(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
