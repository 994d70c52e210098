package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestAmountColumnRoundTrip stores amounts through ordersync.Amount's
// driver.Valuer and reads them back through its sql.Scanner with their
// digits: a TEXT column in SQLite, NUMERIC in PostgreSQL. It lives with
// the store, the one package that holds both drivers, so that the
// domain's own tests link no database driver.
func TestAmountColumnRoundTrip(t *testing.T) {
	values := []string{"6.50", "0.10", "100", "-0.01", "0.00", "123456789012345678901234.123456789012345678"}
	dbs := []struct {
		name, driver, column string
		dsn                  func(t *testing.T) string
	}{
		{DialectSQLite, "sqlite3", "TEXT", func(t *testing.T) string {
			return "file:" + filepath.Join(t.TempDir(), "money.db")
		}},
		{DialectPostgres, "pgx", "NUMERIC", func(t *testing.T) string {
			skipWithoutPostgres(t)
			return os.Getenv(postgresEnv)
		}},
	}
	for _, d := range dbs {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sql.Open(d.driver, d.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx) // one connection: the temporary table lives on it
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "CREATE TEMPORARY TABLE money_round_trip (id INTEGER PRIMARY KEY, amount "+d.column+" NOT NULL)"); err != nil {
				t.Fatalf("create table: %v", err)
			}
			insert := "INSERT INTO money_round_trip (id, amount) VALUES (?, ?)"
			query := "SELECT amount FROM money_round_trip WHERE id = ?"
			if d.driver == "pgx" {
				insert, query = strings.ReplaceAll(insert, "?, ?", "$1, $2"), strings.ReplaceAll(query, "?", "$1")
			}
			for i, s := range values {
				if _, err := conn.ExecContext(ctx, insert, i, ordersync.MustAmount(s)); err != nil {
					t.Fatalf("insert %s: %v", s, err)
				}
				var got ordersync.Amount
				if err := conn.QueryRowContext(ctx, query, i).Scan(&got); err != nil {
					t.Fatalf("select %s: %v", s, err)
				}
				if got.String() != s {
					t.Errorf("stored %s, read back %s", s, got)
				}
			}
		})
	}
}
