package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/testenv"
)

// dataDirConfig is a serve configuration on dir that needs no upstream.
func dataDirConfig(dir string) app.Config {
	cfg := app.DefaultConfig()
	cfg.APIBaseURL, cfg.SecretKey, cfg.WebhookSecrets = "http://127.0.0.1:1", "sk", []string{"whsec"}
	cfg.DataDir = dir
	cfg.DatabaseURL = filepath.Join(dir, "ordersync.db")
	cfg.Listen, cfg.AdminListen, cfg.ReconcileInterval, cfg.ShutdownDrain = "127.0.0.1:0", "127.0.0.1:0", 0, 0
	return cfg
}

// TestDataDirLockedInProcess: a second program on a data directory whose
// embedded NATS another one serves is refused, naming the holder's PID;
// once the first closes, the directory is free again.
func TestDataDirLockedInProcess(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	first, err := app.NewProgram(context.Background(), dataDirConfig(dir), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	second, err := app.NewProgram(context.Background(), dataDirConfig(dir), testLogger(t))
	var locked *datadir.LockedError
	if !errors.As(err, &locked) {
		if second != nil {
			second.Close()
		}
		first.Close()
		t.Fatalf("second program on the same data dir: %v, want a datadir.LockedError", err)
	}
	if locked.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q (PID %d), want it to name the data dir and PID %d", err, locked.PID, os.Getpid())
	}
	first.Close()
	third, err := app.NewProgram(context.Background(), dataDirConfig(dir), testLogger(t))
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	third.Close()
}

// TestDataDirLockedByKilledProcess: a `serve` process holds its data
// directory; a program started beside it is refused with the process's
// PID; once the process is killed with SIGKILL the directory is free. Its
// embedded NATS port takes only clients with the password from the data
// directory.
func TestDataDirLockedByKilledProcess(t *testing.T) {
	t.Parallel()
	cfg := testChildConfig(t, "http://127.0.0.1:1", app.RandomSecret(), app.RandomSecret())
	c, err := child.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	pid := c.PID()

	withPassword := c.NATSURL()
	if !strings.Contains(withPassword, "@") {
		t.Fatalf("the child wrote no NATS password to %s", datadir.NATSPasswordFile(cfg.DataDir))
	}
	if nc, err := nats.Connect(withPassword, nats.Timeout(2*time.Second)); err != nil {
		t.Errorf("connect to the child's NATS port with the password: %v", err)
	} else {
		nc.Close()
	}
	bare := fmt.Sprintf("nats://127.0.0.1:%d", c.Ports().NATS)
	if nc, err := nats.Connect(bare, nats.Timeout(2*time.Second)); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Errorf("connect to the child's NATS port without credentials: %v, want %v", err, nats.ErrAuthorization)
	}

	p, err := app.NewProgram(context.Background(), dataDirConfig(cfg.DataDir), testLogger(t))
	var locked *datadir.LockedError
	if !errors.As(err, &locked) || locked.PID != pid {
		if p != nil {
			p.Close()
		}
		t.Fatalf("a program beside serve (PID %d) on its data dir: %v, want a datadir.LockedError naming PID %d", pid, err, pid)
	}
	c.Kill()
	p, err = app.NewProgram(context.Background(), dataDirConfig(cfg.DataDir), testLogger(t))
	if err != nil {
		t.Fatalf("after SIGKILL of the holder: %v", err)
	}
	p.Close()
}

// TestDataDirOwnerOnly: a new data directory, the SQLite files, the
// JetStream store and the NATS password are open to their owner only,
// whatever the umask lets through.
func TestDataDirOwnerOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	st := startTestStack(t, app.StackOptions{DataDir: dir, Configure: func(c *app.Config) { c.NATSPort = -1 }})
	// Something in the mirror and the stream, so their files exist.
	if _, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 3, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ordersync.db", "ordersync.db-wal", "jetstream", "nats-password", datadir.LockFileName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	n := 0
	// The stack is live while the walk runs: JetStream removes a message
	// block once its messages are acked, so an entry listed a moment ago
	// may be gone. A vanished entry has no mode to check and is skipped.
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n++
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s is mode %04o: open to other users", path, perm)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("walked %d entries, want the whole data dir", n)
	}
}

// TestWarnsOnSharedDataDir: an existing data directory, database and
// JetStream store readable by others are named in a warning at start.
func TestWarnsOnSharedDataDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	p, err := app.NewProgram(context.Background(), dataDirConfig(dir), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if logs := startAndLog(t, dir); strings.Contains(logs, "level=WARN") {
		t.Errorf("warnings on a private data dir:\n%s", logs)
	}
	for path, mode := range map[string]os.FileMode{
		dir: 0o755, filepath.Join(dir, "jetstream"): 0o750, filepath.Join(dir, "ordersync.db"): 0o644,
	} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	logs := startAndLog(t, dir)
	for _, want := range []string{
		fmt.Sprintf("path=%s mode=0755", dir),
		fmt.Sprintf("path=%s mode=0750", filepath.Join(dir, "jetstream")),
		fmt.Sprintf("path=%s mode=0644", filepath.Join(dir, "ordersync.db")),
	} {
		if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, want) {
			t.Errorf("no warning with %q in:\n%s", want, logs)
		}
	}
}

// startAndLog opens and closes a program on dir and returns its log.
func startAndLog(t *testing.T, dir string) string {
	t.Helper()
	var buf testenv.Buffer
	p, err := app.NewProgram(context.Background(), dataDirConfig(dir), slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	return buf.String()
}
