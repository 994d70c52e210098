package main

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/sim"
)

// TestLinksCreateReleasesFetchSeqLease: `links create` fetches the order
// it created under the fetch sequence's lease, alone on the database, and
// gives the lease back on exit: the next process to take numbers (a serve
// started right after) is granted the lease and waits for nobody, rather
// than up to 2 s for the CLI's lease to run out. What that process is
// told decides, not a clock.
func TestLinksCreateReleasesFetchSeqLease(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "mirror.db")
			testdb.SQLiteFile(t, path)
			return "sqlite:" + path
		}},
		{"postgres", func(t *testing.T) string { return testdb.Services(t).DatabaseURL }},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			url := d.url(t)
			const key = "sk_lease"
			simulator, err := sim.New(sim.Config{SecretKey: key, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { simulator.Close() })
			simURL, err := simulator.Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			out, err := runCLI(t, "links", "create", "--amount", "5", "--database-url="+url, "--api-base-url="+simURL, "--secret-key="+key)
			if err != nil || !strings.Contains(out, "created and recorded") {
				t.Fatalf("links create: %v\n%s", err, out)
			}
			nextTakesLease(t, url, "the next process after links create")
		})
	}
}

// TestServeShutdownReleasesFetchSeqLease: serve, alone on its mirror,
// fetches under the fetch sequence's lease and gives it back when it shuts
// down cleanly, so a successor (a rolling restart) takes numbers at once.
// The successor's answer from the mirror decides, not a clock: the check
// follows serve's last fetches by well under the lease's 2 s.
func TestServeShutdownReleasesFetchSeqLease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testdb.SQLiteFile(t, datadir.DatabaseFile(dir))
	st, err := app.StartStack(context.Background(), app.StackOptions{DataDir: dir, Seed: 9, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	if _, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 3, rand.New(rand.NewPCG(9, 9))); err != nil {
		t.Fatal(err)
	}
	waitMirrorMatches(t, st, 10*time.Second)
	url := st.Program.Config().DatabaseURL
	if err := st.Close(); err != nil {
		t.Fatalf("close stack: %v", err)
	}
	nextTakesLease(t, url, "serve's successor")
}

// nextTakesLease checks that a process opening the mirror at url after
// another has closed is given the fetch sequence's lease at once, not
// told to wait for the other's to run out.
func nextTakesLease(t *testing.T, url, who string) {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.DatabaseURL = url
	next, err := app.OpenLocal(context.Background(), cfg, app.LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	_, until, wait, err := next.DB().LeaseFetchSeq(context.Background(), "next", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !wait.IsZero() || until.IsZero() {
		t.Errorf("%s: told to wait until %v (%v from now), lease until %v; want no wait and the lease",
			who, wait, time.Until(wait).Round(time.Millisecond), until)
	}
}
