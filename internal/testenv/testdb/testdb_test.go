package testdb

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/store"
)

func TestMain(m *testing.M) { leak.Main(m, Close) }

// TestCopyIsTheTemplate: the schema Services copies has the tables,
// columns, defaults, constraints, indexes, views, sequences and goose
// versions of the template store.Open migrated, so a test on the copy
// tests the migrated schema.
func TestCopyIsTheTemplate(t *testing.T) {
	run := Services(t)
	want, got := testenv.PostgresCatalog(t, pg.admin, pg.schema), testenv.PostgresCatalog(t, pg.admin, run.Namespace)
	if len(want) < 100 {
		t.Fatalf("the template's catalog has %d entries: too few to be the migrated schema", len(want))
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("the copy lacks %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("the copy has %s, the template does not", g)
		}
	}
}

// TestSQLiteFileIsMigrated: the file SQLiteFile writes opens with every
// migration applied (store.Open applies none and logs none), and each
// call writes a database of its own.
func TestSQLiteFileIsMigrated(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a.db"), filepath.Join(t.TempDir(), "b.db")
	SQLiteFile(t, a)
	SQLiteFile(t, b)
	var logs testenv.Buffer
	db, err := store.Open(context.Background(), store.Config{URL: "sqlite:" + a, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "applied migration") {
		t.Errorf("opening the copy applied migrations:\n%s", logs.String())
	}
	if !bytes.Equal(readFile(t, b), sqliteTmpl.file) {
		t.Error("opening one copy changed another")
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
