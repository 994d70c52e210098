package store

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
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
				params := make([]ordersync.ApplyParams, 100)
				for i := range params {
					params[i] = fetched(orderDoc(t, fmt.Sprintf("c%d-%d", batch, i), batch*100+i+1, ordersync.StatusPending), int64(batch*100+i+1))
				}
				apply(t, db, params...)
			}
			deadline := time.Now().Add(5 * time.Second)
			for fileSize(t, path) <= before {
				if time.Now().After(deadline) {
					t.Fatalf("database file still %d bytes 5s after writing: nothing checkpointed the WAL", before)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Size()
}
