package store

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// Migrate brings the schema up to date; it does nothing when it already is.
// Processes migrating the same database at once take turns: PostgreSQL
// through goose's session-level advisory lock, SQLite through a lock file
// next to the database.
func (db *DB) Migrate(ctx context.Context) error {
	provider, unlock, err := db.migrations(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s store: %w", db.dialect, err)
	}
	for _, r := range results {
		db.logger.InfoContext(ctx, "applied migration", "version", r.Source.Version, "duration", r.Duration)
	}
	if err := db.backfillSearch(ctx); err != nil {
		return fmt.Errorf("migrate %s store: %w", db.dialect, err)
	}
	if err := db.backfillNameTokenKeys(ctx); err != nil {
		return fmt.Errorf("migrate %s store: %w", db.dialect, err)
	}
	if err := db.backfillMinorUnits(ctx); err != nil {
		return fmt.Errorf("migrate %s store: %w", db.dialect, err)
	}
	if err := db.backfillIdentifierKeys(ctx); err != nil {
		return fmt.Errorf("migrate %s store: %w", db.dialect, err)
	}
	return nil
}

// migrations is the goose provider of the dialect's migrations, holding the
// migration lock (SQLite's at once, PostgreSQL's around each run) until
// unlock.
func (db *DB) migrations(ctx context.Context) (provider *goose.Provider, unlock func(), err error) {
	var (
		dir     = "migrations/" + db.dialect
		dialect goose.Dialect
		opts    = []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	)
	unlock = func() {}
	switch db.dialect {
	case DialectSQLite:
		dialect = goose.DialectSQLite3
		if unlock, err = lockFile(ctx, db.migrateLock); err != nil {
			return nil, nil, fmt.Errorf("migrate sqlite store: %w", err)
		}
	case DialectPostgres:
		dialect = goose.DialectPostgres
		id, err := db.postgresLockID(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("migrate postgres store: %w", err)
		}
		// Retry every second (goose's minimum) for up to five minutes.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(id), lock.WithLockTimeout(1, 300))
		if err != nil {
			return nil, nil, fmt.Errorf("migrate postgres store: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	fsys, err := fs.Sub(migrations, dir)
	if err == nil {
		provider, err = goose.NewProvider(dialect, db.write.DB, fsys, opts...)
	}
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("migrate %s store: %w", db.dialect, err)
	}
	return provider, unlock, nil
}

// postgresLockID derives the migration lock from the schema migrations go
// into, so databases (or schemas) that share a server do not wait for each
// other, while processes sharing one schema do.
func (db *DB) postgresLockID(ctx context.Context) (int64, error) {
	var schema string
	if err := db.write.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return 0, fmt.Errorf("read current schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("ordersync migrations " + schema))
	return int64(h.Sum64() >> 1), nil
}

// MigratedSQLiteFile is the content of a SQLite file Open migrated from
// empty, closed so that its write-ahead log is checkpointed into it: the
// template tests copy for a fresh mirror at the current version (store's
// and testdb's tests), as they copy a migrated template database on
// PostgreSQL (testenv.Databases).
func MigratedSQLiteFile() ([]byte, error) {
	dir, err := os.MkdirTemp("", "ordersync-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mirror.db")
	db, err := Open(context.Background(), Config{URL: "sqlite:" + path, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s-wal holds %d bytes after close", path, fi.Size())
	}
	return os.ReadFile(path)
}
