package testenv

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// TestDatabases: each New is a database of its own holding what the
// template's Migrate made, apart from the others; Empty holds none of it;
// each is dropped when its test ends, and the template by Close, which
// vacuums pg_database.
func TestDatabases(t *testing.T) {
	base := postgresBase(t)
	ctx := context.Background()
	open := func(url string) *sql.DB {
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	d := &Databases{Base: base, Migrate: func(url string) error {
		db := open(url)
		defer db.Close()
		_, err := db.ExecContext(ctx, `CREATE TABLE marks (n int); INSERT INTO marks VALUES (1)`)
		return err
	}}
	var names []string
	t.Run("copies", func(t *testing.T) {
		// Empty first: it opens the admin connection, not the template.
		e := open(d.Empty(t))
		defer e.Close()
		a, b := open(d.New(t)), open(d.New(t))
		defer a.Close()
		defer b.Close()
		if _, err := a.ExecContext(ctx, `INSERT INTO marks VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		for db, want := range map[*sql.DB]int{a: 2, b: 1} {
			var n int
			var name string
			if err := db.QueryRowContext(ctx, `SELECT count(*), current_database() FROM marks`).Scan(&n, &name); err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("%s holds %d marks, want %d", name, n, want)
			}
			names = append(names, name)
		}
		var tables int
		if err := e.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'marks'`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Error("Empty's database holds the template's table")
		}
	})
	closed := time.Now()
	d.Close()
	names = append(names, d.template)
	admin := open(base)
	defer admin.Close()
	// The statistics reach the view within the server's stats interval:
	// the sleep polls, it decides nothing.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var last *time.Time
		if err := admin.QueryRowContext(ctx, `SELECT last_vacuum FROM pg_stat_sys_tables WHERE relname = 'pg_database'`).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != nil && !last.Before(closed.Add(-time.Second)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pg_database last vacuumed at %v, before Close at %v", last, closed)
		}
	}
	for _, name := range names {
		var n int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("database %s outlived its test", name)
		}
	}
}
