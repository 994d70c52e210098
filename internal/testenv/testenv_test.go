package testenv

import (
	"context"
	"database/sql"
	"testing"
)

// TestNewKeepsServerSettings: a lab run's pipeline commits as a
// deployment's would, at the server's synchronous_commit, not at the
// setting test databases skip the disk wait with.
func TestNewKeepsServerSettings(t *testing.T) {
	base := postgresBase(t)
	ctx := context.Background()
	run, err := New(ctx, "", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run.Close(); err != nil {
			t.Error(err)
		}
	})
	read := func(url string) string {
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got, want := read(run.DatabaseURL), read(base); got != want {
		t.Errorf("the run's synchronous_commit is %q, the server's %q", got, want)
	}
}
