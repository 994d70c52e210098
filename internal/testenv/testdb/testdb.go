// Package testdb gives a test a fresh database already at the current
// schema version, copied from a template migrated once per test binary:
// migrating from empty is a transaction per migration, each synced to
// disk, about a second a database on a loaded machine. It is apart from
// testenv because it imports store, whose own tests import testenv.
package testdb

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

var sqliteTmpl struct {
	once sync.Once
	file []byte
	err  error
}

// SQLiteFile writes a migrated SQLite database at path, for a program
// whose database is that file: store.Open then finds every migration
// applied.
func SQLiteFile(t testing.TB, path string) {
	t.Helper()
	sqliteTmpl.once.Do(func() { sqliteTmpl.file, sqliteTmpl.err = store.MigratedSQLiteFile() })
	if sqliteTmpl.err != nil {
		t.Fatalf("migrate the template SQLite file: %v", sqliteTmpl.err)
	}
	if err := os.WriteFile(path, sqliteTmpl.file, 0o600); err != nil {
		t.Fatal(err)
	}
}

// SQLitePath is the path of a new SQLite file in a temp dir of t, at the
// current schema version (SQLiteFile): for a test whose subject is not
// the migrations, which the store's own tests cover.
func SQLitePath(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mirror.db")
	SQLiteFile(t, path)
	return path
}

var pg = &testenv.Databases{
	Base: os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"),
	Migrate: func(url string) error {
		db, err := store.Open(context.Background(), store.Config{URL: url, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		return db.Close()
	},
}

// Prepare starts migrating the template database in the background, when
// ORDERSYNC_TEST_POSTGRES_URL is set, so that the package's first
// Services does not wait for it: a TestMain calls it before m.Run. The
// serial tests run while it migrates; the parallel ones, where Services
// is mostly called, start after them.
func Prepare() {
	if pg.Base != "" {
		pg.Prepare()
	}
}

// Services is testenv.Services with the run's database at the current
// schema version (testenv.Databases). A package that calls it drops the
// template with Close from its TestMain.
func Services(t testing.TB) *testenv.Run {
	t.Helper()
	return testenv.Services(t, pg.New)
}

// PostgresURL is a new database at the current schema version, dropped
// when t ends, or "" when ORDERSYNC_TEST_POSTGRES_URL is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	if pg.Base == "" {
		return ""
	}
	return pg.New(t)
}

// Close drops the template database, if Services or Prepare made one,
// waiting for Prepare's migration to end.
func Close() { pg.Close() }
