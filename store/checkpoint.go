package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// SQLite tuning of the write connection. SQLite's automatic checkpoint runs
// inside the COMMIT of whichever transaction pushes the WAL past 1000 pages:
// it copies the WAL back into the database file and fsyncs it, which cost
// about 60% of a 100-order commit. The single write connection then holds
// every other writer (and the worker's fetch sequence) behind that copy. So
// the write connection turns it off, and a goroutine of DB checkpoints on a
// connection of its own, next to the writer instead of in its way.
const (
	// sqliteJournalSizeLimit truncates the WAL back to this size when it
	// restarts, so a burst does not leave a huge file behind.
	sqliteJournalSizeLimit = 64 << 20
)

// sqliteConnector opens mattn/go-sqlite3 connections that run pragmas first,
// so a connection the pool replaces is set up like the first one.
type sqliteConnector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func newSQLiteConnector(dsn string, pragmas ...string) sqliteConnector {
	return sqliteConnector{dsn: dsn, driver: &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			for _, p := range pragmas {
				if _, err := c.Exec(p, nil); err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
			}
			return nil
		},
	}}
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return c.driver }

// writePragmas are the write connection's settings; autoCheckpoint is false
// when DB runs its own checkpoints. The page cache keeps SQLite's default
// size: the writer touches few pages again, so a larger cache only costs
// resident memory.
func writePragmas(autoCheckpoint bool) []string {
	p := []string{
		"PRAGMA temp_store = MEMORY",
		fmt.Sprintf("PRAGMA journal_size_limit = %d", sqliteJournalSizeLimit),
	}
	if !autoCheckpoint {
		p = append(p, "PRAGMA wal_autocheckpoint = 0")
	}
	return p
}

// DefaultCheckpointInterval is the default Config.CheckpointInterval. A
// checkpoint copies each page once however many commits rewrote it since
// the last one, and a status change rewrites the same hot pages (index
// interiors, the tails of the append-only tables) as its neighbours: four
// seconds between checkpoints write about a fifth fewer bytes per change
// than one, where a longer wait gains little more (under load the WAL
// bound checkpoints first) and keeps more of the WAL unsynced.
const DefaultCheckpointInterval = 4 * time.Second

// DefaultMaxWALBytes is the default Config.MaxWALBytes.
const DefaultMaxWALBytes = 64 << 20

// checkpointLoop checkpoints the WAL every interval until ctx ends. A PASSIVE
// checkpoint copies what it can without waiting for anybody: writers go on
// appending meanwhile, readers keep their snapshots. It does not bound the
// WAL: under steady writes it rarely copies the last frame, and the WAL
// starts again from its beginning only after a checkpoint copied everything
// while no reader held an older snapshot. The writer bounds it (boundWAL).
func (db *DB) checkpointLoop(ctx context.Context, conn *sql.DB, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// SQLite runs one checkpoint at a time and answers busy at once to
		// a second, without waiting: the writer's truncate and this loop
		// take turns.
		if db.wal != nil {
			db.wal.mu.Lock()
		}
		_, _, err := checkpoint(ctx, conn, "PASSIVE")
		if db.wal != nil {
			db.wal.mu.Unlock()
		}
		if err != nil && ctx.Err() == nil {
			db.logger.Warn("sqlite WAL checkpoint failed; retrying on the next tick", "err", err)
		}
	}
}

// walBound is the WAL's size limit, which the writer keeps.
type walBound struct {
	path string // the -wal file
	max  int64
	// mu lets one checkpoint of this DB run at a time (SQLite refuses a
	// second at once, busy, rather than waiting for it).
	mu sync.Mutex
	// retryAbove: after a truncate that readers kept from finishing, the
	// next waits until the WAL has grown by another quarter of max, so
	// that a reader holding a snapshot for long does not stall every
	// commit for the busy timeout.
	retryAbove atomic.Int64
}

// boundWAL keeps SQLite's WAL file within Config.MaxWALBytes: run after a
// commit, when the file is longer, it checkpoints in TRUNCATE mode on the
// write connection. That holds the writers back (the commit's caller
// included: the bound is back-pressure), waits up to the busy timeout for
// the readers of older snapshots to finish (new readers read the database
// file and do not hold it), copies the rest of the WAL and empties the
// file. The background PASSIVE checkpoints have copied most of it already,
// so the wait is short. The WAL thus stays under MaxWALBytes plus one
// transaction's frames, unless a read lasts longer than the busy timeout.
func (db *DB) boundWAL(ctx context.Context) {
	b := db.wal
	if b == nil {
		return
	}
	over := func() (os.FileInfo, bool) {
		fi, err := os.Stat(b.path)
		return fi, err == nil && fi.Size() > max(b.max, b.retryAbove.Load())
	}
	if _, ok := over(); !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fi, ok := over() // another commit may have truncated it meanwhile
	if !ok {
		return
	}
	busy, walPages, err := checkpoint(ctx, db.write.DB, "TRUNCATE")
	switch {
	case err != nil:
		if ctx.Err() == nil {
			db.logger.Warn("sqlite WAL over its bound; truncating it failed", "wal_bytes", fi.Size(), "max_wal_bytes", b.max, "err", err)
		}
		b.retryAbove.Store(fi.Size() + b.max/4)
	case busy && walPages < 0:
		// Another process's checkpoint was running: the next commit tries
		// again.
	case busy:
		db.logger.Warn("sqlite WAL over its bound, and a read held an older snapshot past the busy timeout; it will be truncated when the WAL has grown further",
			"wal_bytes", fi.Size(), "wal_pages", walPages, "max_wal_bytes", b.max)
		b.retryAbove.Store(fi.Size() + b.max/4)
	default:
		b.retryAbove.Store(0)
	}
}

// checkpoint runs one checkpoint in mode and says whether it could not
// finish (SQLite's busy: a reader or another checkpoint held it) and the
// WAL's length in pages.
func checkpoint(ctx context.Context, conn *sql.DB, mode string) (busy bool, walPages int, err error) {
	var b, done int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&b, &walPages, &done); err != nil {
		return false, 0, fmt.Errorf("checkpoint sqlite WAL (%s): %w", mode, err)
	}
	return b != 0, walPages, nil
}
