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
// Every exported method runs in one transaction. Driver errors are translated
// at this boundary: a missing row is ordersync.ErrNotFound, a unique
// violation is ordersync.ErrConflict.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/jackc/pgx/v5/pgconn"
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

// sqliteBusyTimeout is how long a SQLite connection waits for a lock held by
// another process before giving up. Within one process writers never get
// there: they queue for the single write connection.
const sqliteBusyTimeout = 10 * time.Second

// sqliteReadCacheKiB is the page cache of each SQLite read connection (the
// default is 2 MiB): a search by a name that thousands of orders share
// reads its words' pages and its page's orders through it, and with the
// default a third of that query's CPU went to reading pages again. SQLite
// grows a cache only as pages are read; docs/deployment.md says what the
// read pool's connections may hold together.
const sqliteReadCacheKiB = 16384

// Config configures Open.
type Config struct {
	// URL selects the database: a file path, "sqlite:PATH" or
	// "file:PATH?..." for SQLite; "postgres://..." or "postgresql://..." for
	// PostgreSQL. It may hold a password: it is never logged.
	URL string
	// MaxOpenConns and MaxIdleConns size the pool: the read pool for SQLite
	// (writes always use one connection), the whole pool for PostgreSQL.
	MaxOpenConns int
	MaxIdleConns int
	// ConnMaxLifetime recycles connections (0: never; PostgreSQL defaults to
	// 30 minutes).
	ConnMaxLifetime time.Duration
	// Migrate runs the migrations at Open (default true).
	Migrate *bool
	// CheckpointInterval is how often SQLite's WAL is checkpointed by a
	// goroutine of the DB, off the write path (default 1s). Negative leaves
	// it to SQLite, inside the commit that crosses 1000 pages.
	CheckpointInterval time.Duration
	// MaxWALBytes bounds SQLite's WAL file: a commit that leaves it longer
	// runs a TRUNCATE checkpoint before it returns, which waits for the
	// readers of older snapshots and empties the file. Default 64 MiB
	// (DefaultMaxWALBytes); negative turns the bound off.
	MaxWALBytes int64
	// IndexAfterApply makes ApplyOrders run the indexer (IndexNow) after
	// its commit, before it returns, so that the read side shows every
	// write as soon as it returns: for tests and one-shot tools. A service
	// runs RunIndexer instead.
	IndexAfterApply bool
	Logger          *slog.Logger
}

// withDefaults fills every unset field; dialect-dependent defaults depend on
// the URL, so it returns the parsed target too.
func (c Config) withDefaults() (Config, target, error) {
	t, err := parseURL(c.URL)
	if err != nil {
		return c, t, err
	}
	if c.MaxOpenConns == 0 {
		if t.dialect == DialectSQLite {
			c.MaxOpenConns = max(4, runtime.NumCPU())
		} else {
			c.MaxOpenConns = 10
		}
	}
	if c.MaxIdleConns == 0 {
		c.MaxIdleConns = c.MaxOpenConns
	}
	if c.ConnMaxLifetime == 0 && t.dialect == DialectPostgres {
		c.ConnMaxLifetime = 30 * time.Minute
	}
	if c.Migrate == nil {
		migrate := true
		c.Migrate = &migrate
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = time.Second
	}
	if c.MaxWALBytes == 0 {
		c.MaxWALBytes = DefaultMaxWALBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, t, nil
}

func (c Config) validate() error {
	switch {
	case c.MaxOpenConns < 0:
		return fmt.Errorf("store: MaxOpenConns must not be negative, got %d", c.MaxOpenConns)
	case c.MaxIdleConns < 0:
		return fmt.Errorf("store: MaxIdleConns must not be negative, got %d", c.MaxIdleConns)
	case c.MaxIdleConns > c.MaxOpenConns:
		return fmt.Errorf("store: MaxIdleConns (%d) must not exceed MaxOpenConns (%d)", c.MaxIdleConns, c.MaxOpenConns)
	case c.ConnMaxLifetime < 0:
		return fmt.Errorf("store: ConnMaxLifetime must not be negative, got %s", c.ConnMaxLifetime)
	}
	return nil
}

// target is where a URL points.
type target struct {
	dialect string
	// postgres: the URL as given. sqlite: the file path and the URL's own
	// query parameters.
	dsn    string
	path   string
	params url.Values
	// uri keeps a file: URL a URI, so SQLite reads its own parameters
	// (mode, cache, …); a plain path is never parsed as one.
	uri bool
}

func parseURL(raw string) (target, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return target{}, errors.New("store: URL is required")
	}
	lower := strings.ToLower(raw)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		return target{dialect: DialectPostgres, dsn: raw}, nil
	}
	t := target{dialect: DialectSQLite, params: url.Values{}}
	rest := raw
	switch {
	case strings.HasPrefix(lower, "sqlite:"):
		rest = strings.TrimPrefix(raw[len("sqlite:"):], "//")
	case strings.HasPrefix(lower, "file:"):
		rest = strings.TrimPrefix(raw[len("file:"):], "//")
		if i := strings.IndexByte(rest, '?'); i >= 0 {
			q, err := url.ParseQuery(rest[i+1:])
			if err != nil {
				return target{}, fmt.Errorf("store: URL: bad query: %w", err)
			}
			t.params, rest = q, rest[:i]
		}
		t.uri = true
	case strings.Contains(lower, "://"):
		return target{}, errors.New("store: URL: unsupported scheme (want a SQLite path, sqlite:, file:, postgres:// or postgresql://)")
	}
	t.path = rest
	switch {
	case t.path == "":
		return target{}, errors.New("store: URL: empty SQLite path")
	case t.path == ":memory:" || t.params.Get("mode") == "memory":
		return target{}, errors.New("store: URL: in-memory SQLite is not supported (reads and writes use separate connections)")
	}
	return t, nil
}

// sqliteDSN builds a mattn/go-sqlite3 DSN. Parameters given in the URL win,
// except those that make the write handle the write handle.
func (t target) sqliteDSN(write bool) string {
	q := url.Values{}
	for k, v := range t.params {
		q[k] = v
	}
	setDefault := func(k, v string) {
		if q.Get(k) == "" {
			q.Set(k, v)
		}
	}
	setDefault("_busy_timeout", fmt.Sprint(sqliteBusyTimeout.Milliseconds()))
	setDefault("_synchronous", "NORMAL")
	setDefault("_foreign_keys", "on")
	setDefault("_loc", "UTC")
	if write {
		q.Set("_journal_mode", "WAL")
		// BEGIN IMMEDIATE: a write transaction takes the write lock before
		// it reads, so its reads cannot go stale behind another process.
		q.Set("_txlock", "immediate")
		q.Del("_query_only")
	} else {
		q.Del("_journal_mode")
		q.Set("_query_only", "on")
		setDefault("_cache_size", fmt.Sprint(-sqliteReadCacheKiB))
	}
	if t.uri {
		return "file:" + t.path + "?" + q.Encode()
	}
	return t.path + "?" + q.Encode()
}

// DB is the SQL mirror. It implements ordersync.Mirror, MirrorReader,
// DeadLetters, Outbox, ReconcileSource, CheckSchedule and Retention.
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
	db := &DB{dialect: t.dialect, changed: make(chan struct{}, 1), indexAfterApply: cfg.IndexAfterApply, logger: cfg.Logger.With("component", "store", "dialect", t.dialect)}
	switch t.dialect {
	case DialectSQLite:
		db.path, db.migrateLock = t.path, t.path+"-migrate"
		if t.params.Get("mode") != "ro" {
			createPrivate(t.path)
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

// createPrivate creates a missing SQLite file, and its directory, owner-only
// (SQLite itself would create the file 0644 less the umask, and not the
// directory): the mirror holds buyer data. SQLite gives its -wal and -shm
// files the database file's permissions. Any failure is left for SQLite's
// own open to report.
func createPrivate(path string) {
	_ = os.MkdirAll(filepath.Dir(path), 0o700)
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		_ = f.Close()
	}
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

// rebind turns the ? placeholders every query is written with into the
// dialect's own.
func (db *DB) rebind(query string) string {
	if db.dialect == DialectPostgres {
		return sqlx.Rebind(sqlx.DOLLAR, query)
	}
	return query
}

// inTx runs fn in a write transaction, committed when fn returns nil.
func (db *DB) inTx(ctx context.Context, op string, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.write.BeginTxx(ctx, nil)
	if err != nil {
		return translate(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return translate(op, err)
	}
	if err := tx.Commit(); err != nil {
		return translate(op, fmt.Errorf("commit: %w", err))
	}
	db.boundWAL(ctx)
	return nil
}

// inReadTx runs fn in a read-only transaction: one consistent snapshot.
func (db *DB) inReadTx(ctx context.Context, op string, fn func(tx *sqlx.Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.dialect == DialectPostgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := db.read.BeginTxx(ctx, opts)
	if err != nil {
		return translate(op, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
	return translate(op, fn(tx))
}

// translate turns a driver error into the domain's, wrapped with op.
func translate(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ordersync.ErrNotFound), errors.Is(err, ordersync.ErrConflict):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", op, ordersync.ErrNotFound)
	case isUniqueViolation(err):
		return fmt.Errorf("%s: %w: %w", op, ordersync.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505" // unique_violation
	}
	return false
}

// placeholders returns "?, ?, …" for n arguments.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// dbTime is how a time goes into a column: UTC, microseconds (what
// PostgreSQL keeps), so both dialects hand back what they were given.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// nullTime maps the zero time to NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return dbTime(t)
}

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// utcPtr normalises a scanned nullable time.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// clampLimit applies a default and a maximum to a caller's limit.
func clampLimit(limit, def, maxLimit int) int {
	switch {
	case limit <= 0:
		return def
	case limit > maxLimit:
		return maxLimit
	}
	return limit
}

// conditions is a list query's WHERE clause, built filter by filter: the
// conditions ANDed, and their arguments in order.
type conditions struct {
	where []string
	args  []any
}

// add appends a condition and the arguments of its placeholders.
func (c *conditions) add(cond string, args ...any) {
	c.where = append(c.where, cond)
	c.args = append(c.args, args...)
}

// equal adds "column = ?" when value is set; an empty value filters nothing.
func (c *conditions) equal(column, value string) {
	if value != "" {
		c.add(column+" = ?", value)
	}
}

// sql is the clause for after WHERE; "1 = 1" matches every row.
func (c *conditions) sql() string {
	return strings.Join(append([]string{"1 = 1"}, c.where...), " AND ")
}

// selectList reads the rows of query in one read transaction and turns
// each into what the caller returns.
func selectList[R, T any](ctx context.Context, db *DB, op, query string, args []any, convert func(*R) T) ([]T, error) {
	var out []T
	err := db.inReadTx(ctx, op, func(tx *sqlx.Tx) error {
		var rows []R
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), args...); err != nil {
			return err
		}
		out = make([]T, len(rows))
		for i := range rows {
			out[i] = convert(&rows[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pingSQLiteWrite opens the write connection. Switching a new file to WAL
// needs a lock that SQLite does not wait for with busy_timeout, so when
// several processes open a fresh database at once some see SQLITE_BUSY at
// once: those try again, with jittered waits, for up to sqliteBusyTimeout.
func pingSQLiteWrite(ctx context.Context, db *sqlx.DB) error {
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMaxInterval(200*time.Millisecond), backoff.WithMaxElapsedTime(sqliteBusyTimeout))
	return backoff.Retry(func() error {
		err := db.PingContext(ctx)
		var se sqlite3.Error
		if err != nil && !(errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
}
