package testenv

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Databases gives each test a PostgreSQL database of its own at the
// current schema version, which the server copies from a template
// database migrated once per test binary (CREATE DATABASE ... TEMPLATE):
// a copy of files, about a tenth of a second, where running the
// migrations into a fresh schema takes half a second or more, and exact
// by construction. Dropping a database drops its catalog rows with it,
// where a dropped schema leaves them dead in the database it was in.
type Databases struct {
	// Base is a URL of the server; its database is where the admin
	// connection that creates and drops the others goes.
	Base string
	// Migrate brings the (empty) database at url to the current schema
	// version and closes every connection it opened.
	Migrate func(url string) error

	opened, migrated sync.Once
	admin            *sql.DB
	template         string
	openErr, err     error
}

// New is the URL of a new database at the current schema version,
// dropped when t ends.
func (d *Databases) New(t testing.TB) string {
	t.Helper()
	d.migrated.Do(d.makeTemplate)
	if d.err != nil {
		t.Fatalf("migrate the template database: %v", d.err)
	}
	return d.create(t, d.template)
}

// Empty is the URL of a new database with no schema of ordersync's,
// dropped when t ends: for a test of the migrations themselves.
func (d *Databases) Empty(t testing.TB) string {
	t.Helper()
	d.opened.Do(d.open)
	if d.openErr != nil {
		t.Fatalf("connect to PostgreSQL: %v", d.openErr)
	}
	return d.create(t, "template0")
}

// Prepare migrates the template in the background, so that the first
// test that asks for a database does not wait for it: a TestMain calls it
// before m.Run.
func (d *Databases) Prepare() { go d.migrated.Do(d.makeTemplate) }

// Close drops the template, waiting for Prepare's migration to end,
// vacuums pg_database and closes the admin connection. A TestMain calls
// it after m.Run. Each database dropped leaves a dead row in pg_database,
// which every new connection reads, and autovacuum may be off, as on the
// CI machine.
func (d *Databases) Close() {
	d.migrated.Do(func() {})
	d.opened.Do(func() {})
	if d.admin == nil {
		return
	}
	if d.template != "" {
		if err := dropDatabase(d.admin, d.template); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if _, err := d.admin.Exec("VACUUM pg_catalog.pg_database"); err != nil {
		fmt.Fprintf(os.Stderr, "vacuum pg_database: %v\n", err)
	}
	d.admin.Close()
}

func (d *Databases) open() {
	var admin string
	if admin, d.openErr = ScratchURL(d.Base); d.openErr == nil {
		d.admin, d.openErr = sql.Open("pgx", admin)
	}
}

func (d *Databases) makeTemplate() {
	if d.opened.Do(d.open); d.openErr != nil {
		d.err = d.openErr
		return
	}
	name := databaseName("ordersync_template_")
	if _, d.err = d.admin.Exec("CREATE DATABASE " + name + " TEMPLATE template0"); d.err != nil {
		return
	}
	d.template = name
	var u string
	if u, d.err = DatabaseURL(d.Base, name); d.err == nil {
		d.err = d.Migrate(u)
	}
}

func (d *Databases) create(t testing.TB, template string) string {
	t.Helper()
	name := databaseName("ordersync_test_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The server refuses to copy a template another session is connected
	// to; it waits up to 5 s for the template's closed sessions to end.
	if _, err := d.admin.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(d.admin, name); err != nil {
			t.Error(err)
		}
	})
	u, err := DatabaseURL(d.Base, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// dropDatabase drops name, ending the sessions a test left open to it.
func dropDatabase(admin *sql.DB, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// DatabaseURL is base pointed at the database name, for a database that
// lives only as long as its test (synchronous_commit=off, as ScratchURL).
func DatabaseURL(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse the database URL: %w", err)
	}
	u.Path = "/" + name
	return ScratchURL(u.String())
}

func databaseName(prefix string) string {
	b := make([]byte, 6)
	_, _ = crand.Read(b)
	return prefix + hex.EncodeToString(b)
}
