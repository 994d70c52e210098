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
	return withParams(base, "search_path", schema)
}

// ScratchURL is base for a connection whose work lives only as long as
// its test (a test's database, the connection that creates and drops
// databases and schemas): its commits do not wait for PostgreSQL's WAL to
// reach the disk (synchronous_commit=off). Nothing of a test must
// outlive a crash of the server, which no test causes, and a suite of
// hundreds of databases otherwise waits on the disk for most of its time.
func ScratchURL(base string) (string, error) {
	return withParams(base, "synchronous_commit", "off")
}

// withParams is base with the query parameters of kv, name then value.
func withParams(base string, kv ...string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse the database URL: %w", err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
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
