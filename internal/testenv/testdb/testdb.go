// Package testdb gives a test a fresh database already at the current
// schema version, copied from a template migrated once per test binary:
// migrating from empty is a transaction per migration, each synced to
// disk, about a second a database on a loaded machine. It is apart from
// testenv because it imports store, whose own tests import testenv.
package testdb

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

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

var pg struct {
	once   sync.Once
	admin  *sql.DB
	schema string // the template, migrated by store.Open
	up     string // every migration's Up section, in order
	err    error
}

// Prepare starts migrating the template schema in the background, when
// ORDERSYNC_TEST_POSTGRES_URL is set, so that the package's first
// Services does not wait for it: a TestMain calls it before m.Run. The
// serial tests run while it migrates; the parallel ones, where Services
// is mostly called, start after them.
func Prepare() {
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL")
	if base == "" {
		return
	}
	go pg.once.Do(func() { pg.admin, pg.schema, pg.up, pg.err = postgresTemplate(base) })
}

// Services is testenv.Services with the run's schema at the current
// schema version: the migrations' SQL in one transaction and the
// template's goose version rows. TestCopyIsTheTemplate holds the copy to
// the template. A package that calls it drops the template with Close
// from its TestMain.
func Services(t testing.TB) *testenv.Run {
	t.Helper()
	run := testenv.Services(t)
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL")
	pg.once.Do(func() { pg.admin, pg.schema, pg.up, pg.err = postgresTemplate(base) })
	if pg.err != nil {
		t.Fatalf("migrate the template schema: %v", pg.err)
	}
	if err := copyTemplate(pg.admin, run.Namespace); err != nil {
		t.Fatalf("copy the migrated template into %s: %v", run.Namespace, err)
	}
	return run
}

// Close drops the template schema, if Services or Prepare made one,
// waiting for Prepare's migration to end, and vacuums the catalogs.
func Close() {
	pg.once.Do(func() {})
	if pg.admin == nil {
		return
	}
	if pg.schema != "" {
		if _, err := pg.admin.Exec("DROP SCHEMA " + pg.schema + " CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "drop the template schema %s: %v\n", pg.schema, err)
		}
	}
	if _, err := pg.admin.Exec(testenv.VacuumCatalogs); err != nil {
		fmt.Fprintf(os.Stderr, "vacuum the catalogs: %v\n", err)
	}
	pg.admin.Close()
}

func copyTemplate(admin *sql.DB, schema string) error {
	q := "SET LOCAL search_path = " + schema + ";\n" + pg.up +
		"\nCREATE TABLE goose_db_version (LIKE " + pg.schema + ".goose_db_version INCLUDING ALL);" +
		"\nINSERT INTO goose_db_version (version_id, is_applied, tstamp) SELECT version_id, is_applied, tstamp FROM " + pg.schema + ".goose_db_version ORDER BY id;"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func postgresTemplate(base string) (admin *sql.DB, schema, up string, err error) {
	if up, err = store.MigrationsUp(store.DialectPostgres); err != nil {
		return nil, "", "", err
	}
	scratch, err := testenv.ScratchURL(base, "")
	if err != nil {
		return nil, "", "", err
	}
	if admin, err = sql.Open("pgx", scratch); err != nil {
		return nil, "", "", err
	}
	id := make([]byte, 6)
	_, _ = crand.Read(id)
	schema = "ordersync_template_" + hex.EncodeToString(id)
	ctx := context.Background()
	if _, err = admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return admin, "", "", err
	}
	u, err := testenv.ScratchURL(base, schema)
	if err != nil {
		return admin, schema, "", err
	}
	db, err := store.Open(ctx, store.Config{URL: u, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return admin, schema, "", err
	}
	return admin, schema, up, db.Close()
}
