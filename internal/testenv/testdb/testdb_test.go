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
	want, got := catalog(t, pg.schema), catalog(t, run.Namespace)
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

// catalog describes schema's objects, one line each, without its name.
func catalog(t *testing.T, schema string) []string {
	t.Helper()
	const q = `
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable || ' default=' || COALESCE(column_default, '') || ' identity=' || is_identity
  FROM information_schema.columns WHERE table_schema = $1
UNION ALL
SELECT 'constraint ' || c.conrelid::regclass::text || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid)
  FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1
UNION ALL
SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1
UNION ALL
SELECT 'view ' || viewname || ' ' || definition FROM pg_views WHERE schemaname = $1
UNION ALL
SELECT 'sequence ' || sequence_name || ' ' || start_value || ' ' || increment FROM information_schema.sequences WHERE sequence_schema = $1
UNION ALL
SELECT 'function ' || p.proname || ' ' || pg_get_function_identity_arguments(p.oid)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
UNION ALL
SELECT 'trigger ' || c.relname || ' ' || tg.tgname
  FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT tg.tgisinternal`
	ctx := context.Background()
	rows, err := pg.admin.QueryContext(ctx, q, schema)
	if err != nil {
		t.Fatalf("read the catalog of %s: %v", schema, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.ReplaceAll(s, schema+".", ""))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var versions string
	if err := pg.admin.QueryRowContext(ctx,
		`SELECT string_agg(version_id::text || ':' || is_applied::text, ',' ORDER BY id) FROM `+schema+`.goose_db_version`).Scan(&versions); err != nil {
		t.Fatalf("read the goose versions of %s: %v", schema, err)
	}
	return append(out, "goose versions "+versions)
}
