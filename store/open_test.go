package store_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/store"
)

// TestOpenFreshSQLiteConcurrently: several processes starting at once on a
// new database file (a scale-out on one host, tests) all open it. The
// switch to WAL takes a lock SQLite does not wait for, so without the
// retry some of them fail with "database is locked".
func TestOpenFreshSQLiteConcurrently(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		path := filepath.Join(t.TempDir(), "fresh.db")
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := store.Open(context.Background(), store.Config{URL: path})
				if err == nil {
					db.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, opener %d: %v", round, i, err)
			}
		}
	}
}

// TestNewSQLiteFilePageSize: a new file gets 2 KiB pages (a status change
// writes about 0.7 of the bytes of 4 KiB pages) and WAL mode; a file made
// with 4 KiB pages keeps them and opens as before.
func TestNewSQLiteFilePageSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pageSize := func(path string) (int, string) {
		t.Helper()
		db, err := store.Open(ctx, store.Config{URL: path})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		return pageSizeOf(t, path)
	}
	if size, mode := pageSize(filepath.Join(t.TempDir(), "new", "mirror.db")); size != 2048 || mode != "wal" {
		t.Errorf("a new file: page size %d, journal mode %s; want 2048 and wal", size, mode)
	}

	old := filepath.Join(t.TempDir(), "old.db")
	conn, err := sql.Open("sqlite3", old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE made_before (a)`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if size, mode := pageSize(old); size != 4096 || mode != "wal" {
		t.Errorf("a file made with 4 KiB pages: page size %d, journal mode %s; want it kept, and wal", size, mode)
	}
}

// TestConvertPageSizeAsDocumented runs docs/deployment.md's command that
// gives a mirror made with 4 KiB pages the new page size: the mirror opens
// with 2 KiB pages, in WAL mode, its orders kept.
func TestConvertPageSizeAsDocumented(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("needs the sqlite3 command, as the conversion does")
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	var command string
	for line := range strings.Lines(string(doc)) {
		if strings.HasPrefix(line, "sqlite3 ordersync.db 'PRAGMA journal_mode=DELETE") {
			command = line
		}
	}
	if command == "" {
		t.Fatal("docs/deployment.md shows no conversion command")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ordersync.db")
	conn, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: ordersync.DefaultAccount, Order: &ordersync.Order{OrderID: "7", OrderCode: "CONV1", OrderStatus: ordersync.StatusPaid}, Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	if size, mode := pageSizeOf(t, path); size != 2048 || mode != "wal" {
		t.Errorf("after the conversion: page size %d, journal mode %s; want 2048 and wal", size, mode)
	}
	db, err = store.Open(ctx, store.Config{URL: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if o, err := db.FindOrderByCode(ctx, ordersync.DefaultAccount, "CONV1"); err != nil || o.Order.OrderStatus != ordersync.StatusPaid {
		t.Fatalf("the order after the conversion: %+v, %v", o, err)
	}
}

// pageSizeOf reads a SQLite file's page size and journal mode.
func pageSizeOf(t *testing.T, path string) (int, string) {
	t.Helper()
	conn, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var size int
	var mode string
	if err := conn.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return size, mode
}
