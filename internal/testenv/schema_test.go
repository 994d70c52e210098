package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestVacuumCatalogs: the statement runs, and pg_attribute, where a
// dropped schema leaves most of its dead rows, is among what it vacuums.
func TestVacuumCatalogs(t *testing.T) {
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("set ORDERSYNC_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	if _, err := conn.Exec(ctx, VacuumCatalogs); err != nil {
		t.Fatalf("%s: %v", VacuumCatalogs, err)
	}
	// The statistics reach the view within the server's stats interval:
	// the sleep polls, it decides nothing.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var last *time.Time
		if err := conn.QueryRow(ctx, `SELECT last_vacuum FROM pg_stat_sys_tables WHERE relname = 'pg_attribute'`).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != nil && !last.Before(start.Add(-time.Second)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pg_attribute last vacuumed at %v, before the statement ran at %v", last, start)
		}
	}
}
