package store

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestPostgresCopyIsTheTemplate: the schema postgresURL copies has the
// tables, columns, defaults, constraints, indexes, views and goose
// versions of the template goose migrated, so tests on the copy test
// the migrated schema.
func TestPostgresCopyIsTheTemplate(t *testing.T) {
	t.Parallel()
	tmpl := postgresTemplate(t)
	u, err := url.Parse(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	copied := u.Query().Get("search_path")
	want, got := catalog(t, tmpl), catalog(t, copied)
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
SELECT 'sequence ' || sequence_name || ' ' || start_value || ' ' || increment FROM information_schema.sequences WHERE sequence_schema = $1`
	rows, err := postgresAdmin(t).QueryContext(context.Background(), q, schema)
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
	if err := postgresAdmin(t).QueryRowContext(context.Background(),
		`SELECT string_agg(version_id::text || ':' || is_applied::text, ',' ORDER BY id) FROM `+schema+`.goose_db_version`).Scan(&versions); err != nil {
		t.Fatalf("read the goose versions of %s: %v", schema, err)
	}
	return append(out, "goose versions "+versions)
}
