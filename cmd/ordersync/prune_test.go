package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// TestServePrunes: serve prunes past the retentions from its start: an
// event log row older than event_log_retention, in the mirror before the
// process started, is gone and counted; a recent one stays.
func TestServePrunes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	testdb.SQLiteFile(t, filepath.Join(dir, "ordersync.db"))
	db, err := store.Open(ctx, store.Config{URL: filepath.Join(dir, "ordersync.db")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = db.RecordEvents(ctx, []ordersync.EventRecord{
		{MsgID: "old", Account: ordersync.DefaultAccount, ReceivedAt: now.Add(-48 * time.Hour), Type: ordersync.EventCreated},
		{MsgID: "recent", Account: ordersync.DefaultAccount, ReceivedAt: now.Add(-time.Hour), Type: ordersync.EventCreated},
	})
	if closeErr := db.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.Fatal(err)
	}

	st := startTestStack(t, app.StackOptions{DataDir: dir, Configure: func(c *app.Config) { c.EventLogRetention = 24 * time.Hour }})
	testenv.Await(t, 10*time.Second, 20*time.Millisecond, func() error {
		rows, err := st.Program.DB().ListEvents(ctx, ordersync.EventFilter{Account: ordersync.DefaultAccount})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].MsgID != "recent" {
			return fmt.Errorf("event log still holds %d rows, want only the recent one", len(rows))
		}
		return nil
	})
	if !strings.Contains(metricsPage(t, st), `ordersync_pruned_rows_total{table="event_log"} 1`) {
		t.Errorf("metrics lack ordersync_pruned_rows_total{table=\"event_log\"} 1")
	}
}
