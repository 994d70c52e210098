package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// TestCheck runs `ordersync check` as a user would before serve: it passes
// on the embedded default, and names each failure with its fix.
func TestCheck(t *testing.T) {
	t.Parallel()
	simURL := startCheckSim(t)
	const portalSecret = "c2VjcmV0LW9mLXRoZS1tZXJjaGFudC1wb3J0YWwtMzI=" // 44 characters, 32 bytes
	base := func(dataDir string) []string {
		return []string{"check", "--data-dir", dataDir, "--api-base-url", simURL, "--webhook-secret", portalSecret,
			"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}
	}

	out, err := runCLI(t, append(base(t.TempDir()), "--secret-key", "sk-right")...)
	if err != nil {
		t.Fatalf("check on the embedded default: %v\n%s", err, out)
	}
	for _, want := range []string{"ok    configuration", "ok    database", "writable, schema at version", "ok    nats             embedded, JetStream store",
		"ok    upstream         " + simURL + " accepts the secret key", "ok    webhook secrets  1 in the portal's form", "ok    listeners"} {
		if !strings.Contains(out, want) {
			t.Errorf("check on the embedded default does not say %q:\n%s", want, out)
		}
	}

	// A wrong secret key.
	out, err = runCLI(t, append(base(t.TempDir()), "--secret-key", "sk-wrong")...)
	for _, want := range []string{"FAIL  upstream         " + simURL + " refused the secret key (HTTP 401)",
		"fix: set secret_key (ORDERSYNC_SECRET_KEY or --secret-key) to the secret key of the merchant portal"} {
		if !strings.Contains(out, want) {
			t.Errorf("check with a wrong key does not say %q:\n%s", want, out)
		}
	}
	if err == nil || err.Error() != "1 of 6 checks failed" {
		t.Errorf("check with a wrong key: %v, want 1 of 6 checks failed", err)
	}

	// A data directory that cannot be created (its parent is a file: root
	// ignores file modes, so a read-only directory would not show it).
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, append(base(filepath.Join(file, "data")), "--secret-key", "sk-right")...)
	for _, want := range []string{"FAIL  database         cannot create the directory of " + filepath.Join(file, "data", "ordersync.db"),
		"fix: make data_dir (or the directory of database_url) a directory this user can write"} {
		if !strings.Contains(out, want) {
			t.Errorf("check with an unwritable database does not say %q:\n%s", want, out)
		}
	}
	if err == nil {
		t.Error("check with an unwritable database passed")
	}

	// A port in use.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	out, err = runCLI(t, append(base(t.TempDir()), "--secret-key", "sk-right", "--listen", busy)...)
	for _, want := range []string{"FAIL  listeners        listen " + busy + ":", "address already in use",
		"fix: stop what listens on " + busy + ", or set listen to a free address"} {
		if !strings.Contains(out, want) {
			t.Errorf("check with a port in use does not say %q:\n%s", want, out)
		}
	}
	if err == nil {
		t.Error("check with a port in use passed")
	}
}

// TestServeLogsChecksAtStart: serve runs the checks its start does not make
// and logs a refused key at once, as an error with its fix.
func TestServeLogsChecksAtStart(t *testing.T) {
	simURL := startCheckSim(t)
	// serve in-process must leave the test binary's runtime alone: its
	// runtime settings apply only while these are unset.
	t.Setenv("GOMAXPROCS", strconv.Itoa(runtime.GOMAXPROCS(0)))
	t.Setenv("GOMEMLIMIT", "off")
	cmd := newRootCommand()
	var out testenv.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"serve", "--data-dir", t.TempDir(), "--api-base-url", simURL, "--secret-key", "sk-wrong",
		"--webhook-secret", "s", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--shutdown-drain", "0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- execute(ctx, cmd) }()
	deadline := time.Now().Add(20 * time.Second)
	want := `level=ERROR msg="check: upstream" component=check result="` + simURL + ` refused the secret key (HTTP 401)" fix="set secret_key (ORDERSYNC_SECRET_KEY or --secret-key) to the secret key of the merchant portal"`
	for !(strings.Contains(out.String(), want) && strings.Contains(out.String(), "ordersync serving")) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.Contains(out.String(), want) {
		t.Errorf("serve's log lacks %s:\n%s", want, out.String())
	}
}

// startCheckSim starts a simulator whose secret key is sk-right.
func startCheckSim(t *testing.T) string {
	t.Helper()
	s, err := sim.New(sim.Config{SecretKey: "sk-right"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	simURL, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return simURL
}
