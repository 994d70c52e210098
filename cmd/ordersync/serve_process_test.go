package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
)

// TestMain lets a test start `ordersync serve` as a real separate process:
// the test binary re-executes itself with child.RunMainEnv set and runs main().
func TestMain(m *testing.M) {
	if os.Getenv(child.RunMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	// The parallel tests wait on leases, gauges and flushes, together.
	testenv.WaitingParallel(8)
	// The scale-out tests' template database migrates beside the serial
	// tests.
	testdb.Prepare()
	leak.Main(m, testdb.Close)
}

// testChildConfig runs this test binary as the ordersync binary. A stop
// closes the listeners at once (no shutdown drain) unless args set one: the
// drain is TestServeDrainsOnSIGTERM's subject, elsewhere a wait.
func testChildConfig(t *testing.T, apiBaseURL, secretKey, webhookSecret string, args ...string) child.Config {
	t.Helper()
	dir := t.TempDir()
	return child.Config{
		Exe: os.Args[0], Env: []string{child.RunMainEnv + "=1"},
		DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "ordersync.log"),
		APIBaseURL: apiBaseURL, SecretKey: secretKey, WebhookSecret: webhookSecret,
		Args: append([]string{"--log-level", "warn", "--shutdown-drain", "0"}, args...),
	}
}

// TestServeKillRestart: the harness starts serve as a child, reads its peak
// RSS and runtime settings, kills it with SIGKILL (the process is gone and reaped), restarts it on
// the same data directory and ports, and stops it cleanly with SIGTERM.
func TestServeKillRestart(t *testing.T) {
	t.Parallel()
	cfg := testChildConfig(t, "http://127.0.0.1:1", app.RandomSecret(), app.RandomSecret())
	c, err := child.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)

	rss, err := c.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || rss > 1<<30 {
		t.Errorf("peak RSS %d bytes is not plausible for a Go service", rss)
	}
	pid, admin := c.PID(), c.AdminURL()
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// serve's own runtime settings (tuneGC, limitServeMemory,
		// spareProcForSQLite).
		families := waitScrape(t, admin+"/metrics", func(map[string]*dto.MetricFamily) bool { return true }, 10*time.Second)
		// The child runs in the test's cgroup.
		limit, _ := chooseServeMemoryLimit(os.Getenv, cgroupMemoryLimit(os.DirFS("/")))
		want := map[string]float64{"go_gc_gogc_percent": 400, "go_gc_gomemlimit_bytes": float64(limit)}
		if os.Getenv("GOMAXPROCS") == "" {
			// One P more than the default, for the SQLite writer.
			want["go_sched_gomaxprocs_threads"] = float64(runtime.GOMAXPROCS(0) + 1)
		}
		for name, want := range want {
			if f := families[name]; f == nil || len(f.Metric) != 1 || f.Metric[0].GetGauge().GetValue() != want {
				t.Errorf("%s = %v, want %v", name, f, want)
			}
		}
	}
	c.Kill()
	if c.PID() != 0 {
		t.Fatal("a killed child still has a pid")
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		t.Errorf("process %d still exists after Kill (not reaped)", pid)
	}
	if resp, err := (&http.Client{Timeout: time.Second}).Get(admin + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("the admin API still answers after SIGKILL")
	}

	if err := c.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.PID() == pid || c.PID() == 0 {
		t.Fatalf("restart did not start a new process: pid %d → %d", pid, c.PID())
	}
	if c.AdminURL() != admin {
		t.Logf("ports changed across the restart (%s → %s): the old ones were taken", admin, c.AdminURL())
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("SIGTERM did not stop the child cleanly: %v", err)
	}
}
