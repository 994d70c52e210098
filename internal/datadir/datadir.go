// Package datadir is the layout of ordersync's data directory (the SQLite
// file, the JetStream store, the embedded NATS password, the lock) and how
// it is kept: owner-only, held by one serving process at a time, with free
// space on its filesystems above a watermark (Space, the min_free_space
// setting, with hysteresis).
package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// LockFileName is the file in the data directory whose lock a serving
// process holds, and whose content is that process's PID.
const LockFileName = "ordersync.lock"

// LockedError says another process serves from the data directory.
type LockedError struct {
	Dir string
	// PID is the holder's process id as it wrote it; 0 when unreadable.
	PID int
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("another ordersync process (PID %d)", e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by %s: two servers on one JetStream store would corrupt it; "+
		"stop that process, or give this one a data_dir of its own", e.Dir, holder)
}

// MakePrivate creates the data directory owner-only and warns when an
// existing one is open to other users: it holds buyer data and the
// embedded NATS credential.
func MakePrivate(dir string, logger *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	WarnIfShared(logger, "data directory", dir)
	return nil
}

// WarnIfShared warns when path exists and other users (its group or
// everyone) may read or enter it. It changes nothing: the operator may
// have shared it on purpose.
func WarnIfShared(logger *slog.Logger, what, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			logger.Warn("cannot check the permissions of the "+what, "path", path, "err", err)
		}
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		want := "600"
		if fi.IsDir() {
			want = "700"
		}
		logger.Warn("the "+what+" is readable by other users of this host, and holds buyer data or credentials",
			"path", path, "mode", fmt.Sprintf("%04o", perm), "fix", "chmod "+want+" "+path)
	}
}

// WarnIfSharedSQLite checks the SQLite database and its WAL files.
func WarnIfSharedSQLite(logger *slog.Logger, path string) {
	if path == "" {
		return
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		WarnIfShared(logger, "database file", path+suffix)
	}
}

// NATSPasswordFile holds the password of the embedded NATS server's TCP
// port (user queue.EmbeddedUser).
func NATSPasswordFile(dataDir string) string { return filepath.Join(dataDir, "nats-password") }

// DatabaseFile is the default SQLite file.
func DatabaseFile(dataDir string) string { return filepath.Join(dataDir, "ordersync.db") }

// JetStreamDir is the embedded JetStream store.
func JetStreamDir(dataDir string) string { return filepath.Join(dataDir, "jetstream") }

// lockPath is the lock file of a data directory.
func lockPath(dir string) string { return filepath.Join(dir, LockFileName) }
