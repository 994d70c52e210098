// Package store is the SQL mirror: ordersync's own copy of the payment link
// service's orders, with their status history, the webhook event log, dead
// letters, the outbox of order events and the fetch sequence that keeps the
// mirror from moving backwards.
//
// One implementation serves two dialects. SQLite (the embedded default) runs
// in WAL mode with every write going through a single connection, so writers
// queue in Go instead of failing with "database is locked", while reads use a
// separate pool. PostgreSQL (scale-out) is shared by many processes; row locks
// and conditional upserts keep them from stepping on each other.
//
// Orders are keyed by (account, order code) and carry a row id; their line
// items, metadata, status history and outbox messages are keyed by that row
// id. Order codes are random, so an index keyed by them takes every new order
// on a random page, and a batch rewrites one page per order per such index;
// row ids grow, so the children's indexes take new orders at their ends
// (BenchmarkApplyNewOrders shows the bytes written per order).
//
// Every exported method runs in one transaction, except the pool's lookups
// by batch (LastFetches, ResolveOrderCodes), which read outside one, one
// statement per batch of codes or ids. Driver errors are translated at this
// boundary: a missing row is ordersync.ErrNotFound, a unique violation is
// ordersync.ErrConflict.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"

	"github.com/ordersync/ordersync"
)

// Dialects a DB speaks.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// DB is the SQL mirror. It implements the root package's store interfaces:
// those of the mirror below, and each file those of its area (endpoints,
// delivery logs and dead letters, the audit trail, reports, exports, …).
type DB struct {
	dialect string
	// write takes every write transaction; for SQLite it holds a single
	// connection. read serves read-only transactions; for PostgreSQL it is
	// the same pool as write.
	write  *sqlx.DB
	read   *sqlx.DB
	logger *slog.Logger
	// path is the SQLite file; migrateLock is the file SQLite migrations
	// lock. Both "" for PostgreSQL.
	path, migrateLock string
	// prepared holds the SQLite write statements by query (see
	// prepareWrites); nil until the first ApplyOrders.
	prepared  atomic.Pointer[map[string]*sql.Stmt]
	prepareMu sync.Mutex
	// rowsStmts holds each size of the multi-row statements (rowsKey →
	// rowsStmt), built once and, on SQLite, prepared by prepareWrites.
	rowsStmts sync.Map
	// preparedShapes counts the statements prepareRows prepared.
	preparedShapes atomic.Int32
	// readSideAnalyzed: IndexNow analyzed the read side after a backlog's
	// first batch, which it does once until RebuildReadSide empties it.
	readSideAnalyzed atomic.Bool
	// readStmts and writeStmts hold SQLite's prepared single statements.
	readStmts, writeStmts *stmtCache
	// checkpoints is SQLite's checkpoint connection, nil when SQLite
	// checkpoints by itself; stopCheckpoints ends checkpointLoop and
	// checkpointing waits for it.
	checkpoints     *sql.DB
	stopCheckpoints context.CancelFunc
	checkpointing   sync.WaitGroup
	// wal bounds SQLite's WAL after each commit; nil for PostgreSQL or
	// with the bound off.
	wal *walBound
	// changed wakes RunIndexer after an apply's commit.
	changed chan struct{}
	// indexAfterApply is Config.IndexAfterApply.
	indexAfterApply bool
	// walkedEntries is how many entries of a store's created index a page
	// of a paid range reads before it sorts the range (walkFirst).
	walkedEntries int
}

var (
	_ ordersync.Mirror             = (*DB)(nil)
	_ ordersync.OrderCodesResolver = (*DB)(nil)
	_ ordersync.MirrorReader       = (*DB)(nil)
	_ ordersync.DeadLetters        = (*DB)(nil)
	_ ordersync.Outbox             = (*DB)(nil)
	_ ordersync.ReconcileSource    = (*DB)(nil)
	_ ordersync.CheckSchedule      = (*DB)(nil)
	_ ordersync.Retention          = (*DB)(nil)
)

// Open connects to the database, checks it answers and, unless
// Config.Migrate is false, brings its schema up to date. Several processes
// may open the same database at once.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg, t, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	db := &DB{dialect: t.dialect, changed: make(chan struct{}, 1), indexAfterApply: cfg.IndexAfterApply, walkedEntries: walkedEntries, logger: cfg.Logger.With("component", "store", "dialect", t.dialect)}
	switch t.dialect {
	case DialectSQLite:
		db.path, db.migrateLock = t.path, t.path+"-migrate"
		if t.params.Get("mode") != "ro" {
			if err := createSQLite(t); err != nil {
				return nil, fmt.Errorf("open sqlite %s: %w", t.path, err)
			}
		}
		autoCheckpoint := cfg.CheckpointInterval < 0
		db.write = sqlx.NewDb(sql.OpenDB(newSQLiteConnector(t.sqliteDSN(true), writePragmas(autoCheckpoint)...)), "sqlite3")
		db.write.SetMaxOpenConns(1)
		db.write.SetMaxIdleConns(1)
		db.write.SetConnMaxLifetime(0)
		// The write connection sets WAL mode, which the read pool relies on,
		// so it connects first.
		if err := pingSQLiteWrite(ctx, db.write); err != nil {
			db.write.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", t.path, err)
		}
		if db.read, err = sqlx.Open("sqlite3", t.sqliteDSN(false)); err != nil {
			db.write.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", t.path, err)
		}
		db.readStmts, db.writeStmts = &stmtCache{db: db.read}, &stmtCache{db: db.write}
	case DialectPostgres:
		if db.write, err = sqlx.Open("pgx", t.dsn); err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		db.read = db.write
	}
	db.read.SetMaxOpenConns(cfg.MaxOpenConns)
	db.read.SetMaxIdleConns(cfg.MaxIdleConns)
	db.read.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if *cfg.Migrate {
		if err := db.Migrate(ctx); err != nil {
			db.Close()
			return nil, err
		}
	}
	if t.dialect == DialectSQLite && cfg.MaxWALBytes > 0 {
		db.wal = &walBound{path: t.path + "-wal", max: cfg.MaxWALBytes}
	}
	if t.dialect == DialectSQLite && cfg.CheckpointInterval > 0 {
		db.checkpoints = sql.OpenDB(newSQLiteConnector(t.sqliteDSN(true)))
		db.checkpoints.SetMaxOpenConns(1)
		db.checkpoints.SetConnMaxLifetime(0)
		var loopCtx context.Context
		loopCtx, db.stopCheckpoints = context.WithCancel(context.WithoutCancel(ctx))
		db.checkpointing.Go(func() { db.checkpointLoop(loopCtx, db.checkpoints, cfg.CheckpointInterval) })
	}
	return db, nil
}

// createSQLite creates a missing SQLite file, and its directory, owner-only
// (SQLite itself would create the file 0644 less the umask, and not the
// directory): the mirror holds buyer data. SQLite gives its -wal and -shm
// files the database file's permissions. A file still empty gets its page
// size (sqlitePageSize) and WAL mode before anything else writes to it;
// when another opener holds it meanwhile (a busy or locked answer), that
// one is doing the same. Failing to create the file is left for SQLite's
// own open to report.
func createSQLite(t target) error {
	_ = os.MkdirAll(filepath.Dir(t.path), 0o700)
	if f, err := os.OpenFile(t.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		_ = f.Close()
	}
	if fi, err := os.Stat(t.path); err != nil || fi.Size() > 0 {
		return nil
	}
	conn, err := sql.Open("sqlite3", t.sqliteCreateDSN())
	if err != nil {
		return err
	}
	defer conn.Close()
	// The page size is the connection's until the first write: both
	// statements run on the one connection.
	conn.SetMaxOpenConns(1)
	for _, p := range []string{fmt.Sprintf("PRAGMA page_size = %d", sqlitePageSize), "PRAGMA journal_mode = WAL"} {
		if _, err := conn.Exec(p); sqliteBusy(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("set up the new file: %s: %w", p, err)
		}
	}
	return nil
}

// sqliteBusy reports whether err is SQLite's answer that another
// connection holds the lock it needs (busy or locked).
func sqliteBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// Path is the SQLite database file, "" for PostgreSQL.
func (db *DB) Path() string { return db.path }

// Close stops the checkpoints and closes every connection. The last
// connection to close checkpoints what remains of the WAL.
func (db *DB) Close() error {
	var err error
	if db.checkpoints != nil {
		db.stopCheckpoints()
		db.checkpointing.Wait()
		err = db.checkpoints.Close()
	}
	if stmts := db.prepared.Load(); stmts != nil {
		for _, s := range *stmts {
			err = errors.Join(err, s.Close())
		}
	}
	if db.readStmts != nil {
		err = errors.Join(err, db.readStmts.close(), db.writeStmts.close())
	}
	err = errors.Join(err, db.write.Close())
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	if err != nil {
		return fmt.Errorf("close %s store: %w", db.dialect, err)
	}
	return nil
}

// Ping checks that the database answers, on every handle.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.write.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s store: %w", db.dialect, err)
	}
	if db.read != db.write {
		if err := db.read.PingContext(ctx); err != nil {
			return fmt.Errorf("ping %s store (read pool): %w", db.dialect, err)
		}
	}
	return nil
}

// Dialect returns DialectSQLite or DialectPostgres.
func (db *DB) Dialect() string { return db.dialect }

// pingSQLiteWrite opens the write connection. Switching a new file to WAL
// needs a lock that SQLite does not wait for with busy_timeout, so when
// several processes open a fresh database at once some see SQLITE_BUSY at
// once: those try again, with jittered waits, for up to sqliteBusyTimeout.
func pingSQLiteWrite(ctx context.Context, db *sqlx.DB) error {
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMaxInterval(200*time.Millisecond), backoff.WithMaxElapsedTime(sqliteBusyTimeout))
	return backoff.Retry(func() error {
		err := db.PingContext(ctx)
		if err != nil && !sqliteBusy(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
}
