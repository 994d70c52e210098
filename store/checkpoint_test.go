package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestCheckpointsOffTheWritePath: the write connection never checkpoints
// (its commits only append to the WAL), yet the database file receives the
// orders, because the DB's own checkpoints copy them over; and Close stops
// them.
func TestCheckpointsOffTheWritePath(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		wantAuto int
	}{
		{"background checkpoints", 20 * time.Millisecond, 0},
		{"sqlite's own checkpoints", -1, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mirror.db")
			db, err := Open(context.Background(), Config{URL: path, CheckpointInterval: tt.interval, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer func() {
				if err := db.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			var auto int
			if err := db.write.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil {
				t.Fatalf("read wal_autocheckpoint: %v", err)
			}
			if auto != tt.wantAuto {
				t.Errorf("write connection wal_autocheckpoint = %d, want %d", auto, tt.wantAuto)
			}
			before := fileSize(t, path)
			// About 3 MB of pages: past SQLite's own 1000-page threshold.
			for batch := range 10 {
				applyNewOrders(t, db, batch)
			}
			testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("the database file to grow past %d bytes: a checkpoint of the WAL", before), func() bool {
				return fileSize(t, path) > before
			})
		})
	}
}

// applyNewOrders commits batch's 100 new orders (about 300 kB of pages),
// their codes and fetch sequences following the batches before it.
func applyNewOrders(t *testing.T, db *DB, batch int) {
	t.Helper()
	params := make([]ordersync.ApplyParams, 100)
	for i := range params {
		n := batch*100 + i + 1
		params[i] = fetched(orderDoc(t, fmt.Sprintf("c%d-%d", batch, i), n, ordersync.StatusPending), int64(n))
	}
	apply(t, db, params...)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Size()
}

// TestWALStaysWithinItsBound: writes go on while readers come and go, some
// reader always holding a snapshot, and the background PASSIVE checkpoints
// run every 5 ms; the writer's TRUNCATE keeps the file under MaxWALBytes
// plus one transaction. Without the bound and without the checkpoints
// (whose restarts of the WAL depend on the readers' timing), the same
// writes grow it past that: the bounded run is not bounded by its load.
func TestWALStaysWithinItsBound(t *testing.T) {
	const (
		bound   = 1 << 20
		batches = 60
		perTx   = 20
	)
	limit := int64(3 * bound) // a transaction is about 0.5-1 MiB
	for _, tt := range []struct {
		name     string
		max      int64
		interval time.Duration
		bounded  bool
	}{
		{"bounded", bound, 5 * time.Millisecond, true},
		{"unbounded", -1, time.Hour, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mirror.db")
			db, err := Open(context.Background(), Config{URL: path, CheckpointInterval: tt.interval, MaxWALBytes: tt.max,
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			ctx, cancel := context.WithCancel(context.Background())
			var readers sync.WaitGroup
			defer readers.Wait()
			defer cancel()
			// Two readers hand a baton back and forth: each takes a new
			// snapshot only once the other holds one, so some reader holds
			// a snapshot at every moment, as under steady reads.
			inbox := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
			for r := range 2 {
				readers.Go(func() {
					var tx *sqlx.Tx
					hold := func() {
						if tx != nil {
							_ = tx.Rollback()
						}
						var err error
						if tx, err = db.read.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true}); err != nil {
							tx = nil
							return
						}
						var n int
						_ = tx.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&n)
					}
					defer func() {
						if tx != nil {
							_ = tx.Rollback()
						}
					}()
					if r == 0 {
						hold()
					}
					for {
						if r == 0 || tx != nil {
							select {
							case inbox[1-r] <- struct{}{}:
							case <-ctx.Done():
								return
							}
						}
						select {
						case <-inbox[r]:
							hold()
						case <-ctx.Done():
							return
						}
					}
				})
			}
			var peak int64
			for batch := range batches {
				params := make([]ordersync.ApplyParams, perTx)
				for i := range params {
					id := batch*perTx + i + 1
					params[i] = fetched(orderDoc(t, fmt.Sprintf("w%d-%d", batch, i), id, ordersync.StatusPending), int64(id))
				}
				apply(t, db, params...)
				peak = max(peak, fileSize(t, path+"-wal"))
			}
			switch {
			case tt.bounded && peak > limit:
				t.Errorf("WAL peaked at %d bytes, want at most %d (MaxWALBytes %d plus a transaction)", peak, limit, bound)
			case !tt.bounded && peak <= limit:
				t.Errorf("without the bound the WAL peaked at %d bytes, within %d: so the bounded run's writes never needed the bound", peak, limit)
			}
			t.Logf("WAL peak %d bytes", peak)
		})
	}
}

// TestCheckIntegrity: a mirror written through the store passes SQLite's
// integrity check; a page overwritten behind its back does not.
func TestCheckIntegrity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mirror.db")
	db, err := Open(ctx, Config{URL: path})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]ordersync.ApplyParams, 200)
	for i := range params {
		params[i] = fetched(orderDoc(t, fmt.Sprintf("ic%d", i), i+1, ordersync.StatusPending), int64(i+1))
	}
	apply(t, db, params...)
	if err := db.CheckIntegrity(ctx); err != nil {
		t.Fatalf("CheckIntegrity of a sound mirror: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Zero the last page's cells (a b-tree page of the orders' indexes or
	// rows), keeping the header page that opening needs.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	size := fileSize(t, path)
	if _, err := f.WriteAt(make([]byte, 4096), size-4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	migrate := false
	db, err = Open(ctx, Config{URL: path, Migrate: &migrate})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CheckIntegrity(ctx); err == nil {
		t.Fatal("CheckIntegrity of a mirror with a zeroed page: nil, want the problems found")
	}
}

// TestCheckpointDefaults: a Config that leaves them unset checkpoints
// every DefaultCheckpointInterval and bounds the WAL at
// DefaultMaxWALBytes; set ones are kept.
func TestCheckpointDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.db")
	for _, tt := range []struct {
		in          Config
		every       time.Duration
		walMaxBytes int64
	}{
		{Config{URL: path}, DefaultCheckpointInterval, DefaultMaxWALBytes},
		{Config{URL: path, CheckpointInterval: time.Second, MaxWALBytes: 1 << 20}, time.Second, 1 << 20},
		{Config{URL: path, CheckpointInterval: -1, MaxWALBytes: -1}, -1, -1},
	} {
		c, _, err := tt.in.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if c.CheckpointInterval != tt.every || c.MaxWALBytes != tt.walMaxBytes {
			t.Errorf("withDefaults(interval %v, max %d) = interval %v, max %d; want %v, %d",
				tt.in.CheckpointInterval, tt.in.MaxWALBytes, c.CheckpointInterval, c.MaxWALBytes, tt.every, tt.walMaxBytes)
		}
	}
	if DefaultCheckpointInterval != 4*time.Second {
		t.Errorf("DefaultCheckpointInterval = %v: docs/deployment.md and docs/how-it-works.md say 4 s", DefaultCheckpointInterval)
	}
}

// TestDefaultCheckpointsGatherCommits: at the defaults, the commits of
// the last 3 s stay in the WAL, each page they rewrote to be copied once
// by the next checkpoint (what a status change costs in bytes written:
// docs/benchmarks.md, "The checkpoint interval"), and within 5 s a
// checkpoint has copied them into the database file. In synctest's time,
// so the seconds are not waited.
func TestDefaultCheckpointsGatherCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.db")
	synctest.Test(t, func(t *testing.T) {
		db, err := Open(context.Background(), Config{URL: path})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer db.Close()
		before := fileSize(t, path)
		for batch := range 5 {
			applyNewOrders(t, db, batch)
			time.Sleep(600 * time.Millisecond)
		}
		synctest.Wait()
		if got := fileSize(t, path); got != before {
			t.Fatalf("the database file grew from %d to %d bytes within 3 s of commits: they were not gathered in the WAL", before, got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := fileSize(t, path); got <= before {
			t.Errorf("the database file is %d bytes 5 s after Open, as before: no checkpoint copied the WAL", got)
		}
	})
}
