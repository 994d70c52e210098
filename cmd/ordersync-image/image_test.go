package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/image"
	"github.com/ordersync/ordersync/sim"
)

// imageEnv names the OCI layout the release wrote (.ci/run sets it to
// OUTDIR/image after .ci/release OUTDIR).
const imageEnv = "ORDERSYNC_TEST_IMAGE"

// TestReleaseImage runs the release's image as a container runtime would,
// without one: its root file system unpacked from the layout, the
// entrypoint started in a chroot as the image's user, in the image's
// working directory and environment. `version` prints the version the
// labels carry; `serve` takes a webhook the simulator signs, mirrors the
// order it names into SQLite in the image's data directory, and stops
// cleanly on SIGTERM.
func TestReleaseImage(t *testing.T) {
	layoutDir := os.Getenv(imageEnv)
	if layoutDir == "" {
		t.Skip(imageEnv + " is not set: .ci/run sets it to the layout .ci/release wrote")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the image test needs root, to unpack the image with its owners and chroot into it")
	}
	img, tag, err := image.Open(layoutDir, "linux/"+runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	file, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := file.Config
	root := t.TempDir()
	if err := image.Unpack(img, root); err != nil {
		t.Fatal(err)
	}
	uid, gid := checkConfig(t, root, tag, cfg)

	run := func(env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(cfg.Entrypoint[0], append(slices.Clone(cfg.Entrypoint[1:]), args...)...)
		cmd.Env = append(slices.Clone(cfg.Env), env...)
		cmd.Dir = cfg.WorkingDir
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		}
		return cmd
	}

	out, err := run(nil, "version").Output()
	if err != nil {
		t.Fatalf("ordersync version in the image: %v", err)
	}
	want := fmt.Sprintf("ordersync %s, commit %s, ", tag, cfg.Labels["org.opencontainers.image.revision"])
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("ordersync version printed %q, want it to start with %q", out, want)
	}

	serveOneWebhook(t, run)
}

// checkConfig holds the image's configuration to what the release
// promises, and returns the user it runs as.
func checkConfig(t *testing.T, root, tag string, cfg v1.Config) (uid, gid uint32) {
	t.Helper()
	u, g, ok := strings.Cut(cfg.User, ":")
	uidN, err1 := strconv.ParseUint(u, 10, 32)
	gidN, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil || uidN == 0 {
		t.Fatalf("image user %q: want a numeric UID:GID, not root", cfg.User)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), fmt.Sprintf(":x:%d:%d:", uidN, gidN)) {
		t.Errorf("the image's /etc/passwd has no entry for %s: %q (%v)", cfg.User, passwd, err)
	}
	if len(cfg.Entrypoint) == 0 || cfg.Entrypoint[0] != image.BinaryPath {
		t.Errorf("entrypoint %q, want %s", cfg.Entrypoint, image.BinaryPath)
	}
	if !slices.Equal(cfg.Cmd, []string{"serve"}) {
		t.Errorf("cmd %q, want serve", cfg.Cmd)
	}
	for _, port := range []int{image.WebhookPort, image.AdminPort} {
		if _, ok := cfg.ExposedPorts[fmt.Sprintf("%d/tcp", port)]; !ok {
			t.Errorf("port %d/tcp is not exposed: %v", port, cfg.ExposedPorts)
		}
	}
	if _, ok := cfg.Volumes[image.DataDir]; !ok {
		t.Errorf("%s is not a volume: %v", image.DataDir, cfg.Volumes)
	}
	if !slices.Contains(cfg.Env, "ORDERSYNC_DATA_DIR="+image.DataDir) {
		t.Errorf("environment %q does not point the data directory at the volume", cfg.Env)
	}
	if cfg.Labels["org.opencontainers.image.version"] != tag || tag == "" {
		t.Errorf("version label %q, layout tag %q: want the same version", cfg.Labels["org.opencontainers.image.version"], tag)
	}
	for _, l := range []string{"revision", "source", "created", "licenses", "title"} {
		if cfg.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("label org.opencontainers.image.%s is missing: %v", l, cfg.Labels)
		}
	}
	info, err := os.Stat(filepath.Join(root, image.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); uint64(st.Uid) != uidN || info.Mode().Perm() != 0o700 {
		t.Errorf("%s: owner %d, mode %v; want the image's user's own, 0700", image.DataDir, st.Uid, info.Mode().Perm())
	}
	return uint32(uidN), uint32(gidN)
}

// serveOneWebhook starts serve from the image against the simulator on
// loopback ports of this test, creates a payment link through it, pays the
// order in the simulator, which signs and posts the webhook, and waits
// until the mirror in the image's data directory has the order PAID.
func serveOneWebhook(t *testing.T, run func(env []string, args ...string) *exec.Cmd) {
	ports, err := child.PickPorts(2)
	if err != nil {
		t.Fatal(err)
	}
	listen, adminURL := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	secretKey, webhookSecret, token := app.RandomSecret(), app.RandomSecret(), app.RandomSecret()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := sim.New(sim.Config{SecretKey: secretKey, WebhookSecret: webhookSecret,
		WebhookURL: "http://" + listen + "/webhooks/paymentlink"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	simURL, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	serve := run([]string{
		"ORDERSYNC_API_BASE_URL=" + simURL, "ORDERSYNC_SECRET_KEY=" + secretKey,
		"ORDERSYNC_WEBHOOK_SECRET=" + webhookSecret, "ORDERSYNC_ADMIN_TOKEN=" + token,
		"ORDERSYNC_LISTEN=" + listen, "ORDERSYNC_ADMIN_LISTEN=127.0.0.1:" + strconv.Itoa(ports[1]),
	}, "serve")
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = serve.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs.String())
		}
	}()

	client := &admin.Client{BaseURL: adminURL, Token: token}
	await(t, exited, "serve to be ready", func() bool {
		resp, err := http.Get(adminURL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	amount, err := ordersync.ParseAmount("12.50")
	if err != nil {
		t.Fatal(err)
	}
	// Through ordersync, which then knows the order the webhooks name by id.
	var link ordersync.PaymentLinkResult
	if err := client.Do(ctx, http.MethodPost, "/v1/payment-links", ordersync.PaymentLinkParams{Amount: &amount}, &link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(link.OrderCode, sim.ActionPay, nil); err != nil {
		t.Fatal(err)
	}
	await(t, exited, "order "+link.OrderCode+" PAID in the mirror", func() bool {
		var o struct {
			OrderStatus ordersync.Status `json:"orderStatus"`
		}
		err := client.Do(ctx, http.MethodGet, "/v1/orders/"+link.OrderCode, nil, &o)
		return err == nil && o.OrderStatus == ordersync.StatusPaid
	})

	stopped = true
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve did not stop cleanly on SIGTERM: %v", err)
		}
	case <-time.After(time.Minute):
		_ = serve.Process.Kill()
		<-exited
		t.Error("serve did not stop within a minute of SIGTERM")
	}
}

// await polls cond until it holds, failing the test when the process
// exits first (its result is put back for the cleanup) or a minute passes.
func await(t *testing.T, exited chan error, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("serve exited while waiting for %s: %v", what, err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
