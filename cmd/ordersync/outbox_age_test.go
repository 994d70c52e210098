package main

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	dto "github.com/prometheus/client_model/go"
)

// TestOutboxOldestUnsentAge: with no relay running, the status messages of
// newly mirrored orders wait in the outbox and
// ordersync_outbox_oldest_unsent_age_seconds rises; with the relay it
// falls back to 0 once they are published.
func TestOutboxOldestUnsentAge(t *testing.T) {
	// It waits for the gauge to be read, on a data directory of its own.
	t.Parallel()
	age := func(f map[string]*dto.MetricFamily) float64 {
		fam := f["ordersync_outbox_oldest_unsent_age_seconds"]
		if fam == nil || len(fam.Metric) != 1 {
			return -1
		}
		return fam.Metric[0].GetGauge().GetValue()
	}
	dir := t.TempDir()
	testdb.SQLiteFile(t, datadir.DatabaseFile(dir))
	st, err := app.StartStack(context.Background(), app.StackOptions{Seed: 5, DataDir: dir, Logger: testLogger(t),
		Configure: func(c *app.Config) { c.Role = "receiver,worker,reconciler" }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 2, rand.New(rand.NewPCG(5, 5))); err != nil {
		t.Fatal(err)
	}
	waitMirrorMatches(t, st, 10*time.Second)
	got := age(waitScrape(t, st.Program.AdminURL()+"/metrics", func(f map[string]*dto.MetricFamily) bool { return age(f) >= 1 }, 15*time.Second))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got < 1 {
		t.Fatalf("without a relay, oldest unsent outbox age = %v, want ≥ 1s", got)
	}

	st = startTestStack(t, app.StackOptions{Seed: 5, DataDir: dir})
	// The gauge reads the outbox at most every 5 s: a scrape before the
	// relay has published would hold the old age that long.
	requireOutboxSent(t, st, 15*time.Second)
	if got := age(waitScrape(t, st.Program.AdminURL()+"/metrics", func(f map[string]*dto.MetricFamily) bool { return age(f) == 0 }, 15*time.Second)); got != 0 {
		t.Errorf("with the relay, oldest unsent outbox age = %v, want 0 once published", got)
	}
}
