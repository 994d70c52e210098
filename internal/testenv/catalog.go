package testenv

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// PostgresCatalog is what schema holds, a line per column, constraint,
// index, view, sequence, function and trigger, with the schema's name
// taken out, and its goose versions: two schemas with equal catalogs were
// built alike (a test's copy and the template it copies).
func PostgresCatalog(t testing.TB, db *sql.DB, schema string) []string {
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
	rows, err := db.QueryContext(ctx, q, schema)
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
	if err := db.QueryRowContext(ctx,
		`SELECT string_agg(version_id::text || ':' || is_applied::text, ',' ORDER BY id) FROM `+schema+`.goose_db_version`).Scan(&versions); err != nil {
		t.Fatalf("read the goose versions of %s: %v", schema, err)
	}
	return append(out, "goose versions "+versions)
}
