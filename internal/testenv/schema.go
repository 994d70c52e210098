package testenv

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// SchemaURL is the PostgreSQL URL base with search_path set to schema, so
// that every connection made from it works in that schema.
func SchemaURL(base, schema string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse the database URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// KeptSchema is SchemaURL(base, schema) for a measurement that keeps its
// mirror between runs: it creates schema when it is missing and never
// removes it.
func KeptSchema(t testing.TB, base, schema string) string {
	t.Helper()
	u, err := SchemaURL(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return u
}
