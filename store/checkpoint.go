package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
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

// checkpointLoop checkpoints the WAL every interval until ctx ends. A PASSIVE
// checkpoint copies what it can without waiting for anybody: writers go on
// appending meanwhile, readers keep their snapshots. Readers that never let
// go can keep it from finishing, so when the WAL is still longer than
// maxPages afterwards, a TRUNCATE checkpoint waits for them (holding new
// writers back briefly) and empties it.
func (db *DB) checkpointLoop(ctx context.Context, conn *sql.DB, interval time.Duration, maxPages int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		walPages, done, err := checkpoint(ctx, conn, "PASSIVE")
		if err != nil {
			if ctx.Err() == nil {
				db.logger.Warn("sqlite WAL checkpoint failed; retrying on the next tick", "err", err)
			}
			continue
		}
		if walPages-done <= maxPages {
			continue
		}
		db.logger.Warn("sqlite WAL keeps growing past its bound: long-running readers hold it; truncating it, which holds writers back meanwhile",
			"wal_pages", walPages, "checkpointed_pages", done, "max_pages", maxPages)
		if _, _, err := checkpoint(ctx, conn, "TRUNCATE"); err != nil && ctx.Err() == nil {
			db.logger.Warn("sqlite WAL truncate checkpoint failed", "err", err)
		}
	}
}

// checkpoint runs one checkpoint in mode and returns the WAL's length and
// how much of it is now in the database file, in pages.
func checkpoint(ctx context.Context, conn *sql.DB, mode string) (walPages, done int, err error) {
	var busy int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &walPages, &done); err != nil {
		return 0, 0, fmt.Errorf("checkpoint sqlite WAL (%s): %w", mode, err)
	}
	return walPages, done, nil
}
