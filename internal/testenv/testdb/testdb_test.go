package testdb

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

func TestMain(m *testing.M) { leak.Main(m, Close) }

// TestPostgresIsMigrated: the database PostgresURL gives opens with
// every migration applied (store.Open applies none and logs none).
func TestPostgresIsMigrated(t *testing.T) {
	url := PostgresURL(t)
	if url == "" {
		t.Skip("set ORDERSYNC_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	openApplyingNone(t, url)
}

// TestSQLiteFileIsMigrated: the file SQLiteFile writes opens with every
// migration applied (store.Open applies none and logs none), and each
// call writes a database of its own.
func TestSQLiteFileIsMigrated(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a.db"), filepath.Join(t.TempDir(), "b.db")
	SQLiteFile(t, a)
	SQLiteFile(t, b)
	openApplyingNone(t, "sqlite:"+a)
	if !bytes.Equal(readFile(t, b), sqliteTmpl.file) {
		t.Error("opening one copy changed another")
	}
}

// openApplyingNone opens the mirror at url and fails t when opening it
// applied a migration.
func openApplyingNone(t *testing.T, url string) {
	t.Helper()
	var logs testenv.Buffer
	db, err := store.Open(context.Background(), store.Config{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "applied migration") {
		t.Errorf("opening the copy applied migrations:\n%s", logs.String())
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
