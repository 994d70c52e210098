package store

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"runtime"
	"strings"
	"time"
)

// sqliteBusyTimeout is how long a SQLite connection waits for a lock held by
// another process before giving up. Within one process writers never get
// there: they queue for the single write connection.
const sqliteBusyTimeout = 10 * time.Second

// sqlitePageSize is a new SQLite file's page size. A commit writes each
// page it changed whole to the WAL, and a checkpoint writes it again; a
// status change changes a leaf of a dozen indexes at random places, so
// smaller pages write fewer bytes. 2 KiB writes about 0.7 of SQLite's
// default 4 KiB per status change at the same CPU; 1 KiB writes no fewer
// in the real mix and costs more CPU, a write call per frame
// (docs/benchmarks.md, "Real mix"). A file keeps the page size it was
// made with.
const sqlitePageSize = 2048

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
	// goroutine of the DB, off the write path (DefaultCheckpointInterval).
	// Negative leaves it to SQLite, inside the commit that crosses 1000
	// pages.
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
		c.CheckpointInterval = DefaultCheckpointInterval
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
	q := maps.Clone(t.params)
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
	return t.withQuery(q)
}

// sqliteCreateDSN is the DSN of the connection that sets up a new SQLite
// file: the URL's own parameters and no journal mode, since WAL mode fixes
// the page size.
func (t target) sqliteCreateDSN() string {
	q := maps.Clone(t.params)
	q.Del("_journal_mode")
	q.Del("_query_only")
	return t.withQuery(q)
}

func (t target) withQuery(q url.Values) string {
	if t.uri {
		return "file:" + t.path + "?" + q.Encode()
	}
	return t.path + "?" + q.Encode()
}
