package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/webhook"
)

// probe polls /readyz as a load balancer does, every interval, and keeps
// its last verdict.
type probe struct {
	ready atomic.Bool
	// unready is closed at the first answer other than 200; body is its.
	unready chan struct{}
	body    string
}

func startProbe(t *testing.T, ctx context.Context, url string, interval time.Duration) *probe {
	t.Helper()
	p := &probe{unready: make(chan struct{})}
	p.ready.Store(true) // child.Start returned once /readyz said 200
	client := &http.Client{Timeout: time.Second}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			status, body := 0, ""
			if resp, err := client.Get(url); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, body = resp.StatusCode, string(b)
			}
			if status != http.StatusOK {
				p.body = body
				p.ready.Store(false)
				close(p.unready)
				return
			}
		}
	})
	return p
}

// signedWebhook is a payment-link webhook for order n, signed with secret,
// and its message id.
func signedWebhook(t *testing.T, url, secret string, n int) (*http.Request, string) {
	t.Helper()
	body := fmt.Appendf(nil, `{"orderId":"%d","orderReference":"drain-%d","orderType":"FASTLINK_CHARGE","description":"x","metadata":null,"level":"Info","type":"Created"}`, n, n)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
	return req, webhook.MsgID(ordersync.DefaultAccount, body)
}

// TestServeDrainsOnSIGTERM: webhooks flow to serve behind a probe that polls
// /readyz every 100 ms, sent only while the probe last saw it ready, as a
// load balancer sends them. On SIGTERM /readyz turns 503 naming the drain
// while the webhook port keeps answering, so no webhook sent while the
// probe said ready meets a refused connection or a non-2xx; the process
// exits 0, and every webhook answered 2xx is in the stream.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	secret := app.RandomSecret()
	// Receiver only: nothing consumes the events stream, so every webhook
	// made durable is still in it when the process has stopped.
	cfg := testChildConfig(t, "http://127.0.0.1:1", app.RandomSecret(), secret, "--role", "receiver", "--shutdown-drain", "1s")
	c, err := child.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr := startProbe(t, ctx, c.AdminURL()+"/readyz", 100*time.Millisecond)

	var (
		mu       sync.Mutex
		accepted []string // message ids answered 2xx
		failed   []string // sent while ready, not answered 2xx
		next     atomic.Int64
		sent     atomic.Int64
	)
	client := &http.Client{Timeout: 10 * time.Second}
	flowing := make(chan struct{})
	var senders sync.WaitGroup
	for range 4 {
		senders.Go(func() {
			for pr.ready.Load() {
				n := int(next.Add(1))
				req, id := signedWebhook(t, c.WebhookURL(), secret, n)
				resp, err := client.Do(req)
				if sent.Add(1) == 200 {
					close(flowing)
				}
				mu.Lock()
				switch {
				case err != nil:
					failed = append(failed, err.Error())
				case resp.StatusCode/100 != 2:
					failed = append(failed, resp.Status)
				default:
					accepted = append(accepted, id)
				}
				mu.Unlock()
				if resp != nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	// Let webhooks flow, then stop the process as systemd or Kubernetes
	// would while they still do.
	<-flowing
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop() }()
	select {
	case <-pr.unready:
	case <-time.After(10 * time.Second):
		t.Fatal("/readyz still answered 200 10 s after SIGTERM")
	}
	senders.Wait()
	if err := <-stopped; err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if !strings.Contains(pr.body, "draining") {
		t.Errorf("/readyz while draining answered %q, want it to name the drain", pr.body)
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d webhooks sent while /readyz said ready were not answered 2xx, e.g. %q", len(failed), sent.Load(), failed[0])
	}
	t.Logf("%d webhooks sent, %d accepted", sent.Load(), len(accepted))

	// Every webhook answered 2xx is in the stream.
	defaults := app.DefaultConfig()
	inStream := streamMsgIDs(t, cfg.DataDir, defaults.QueueConfig().EventsStream)
	missing := 0
	for _, id := range accepted {
		if !inStream[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d webhooks answered 2xx are not in the stream", missing, len(accepted))
	}
}

// streamMsgIDs starts the embedded NATS server of a stopped process's data
// directory and reads the message id of every message in stream.
func streamMsgIDs(t *testing.T, dataDir, stream string) map[string]bool {
	t.Helper()
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: datadir.JetStreamDir(dataDir), PasswordFile: datadir.NATSPasswordFile(dataDir)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		ids[m.Header.Get(jetstream.MsgIDHeader)] = true
	}
	return ids
}

// TestServeReloadsOnSIGHUP: serve reloads its config file on SIGHUP, never
// going down: a new admin token replaces the old one; a rotated webhook
// secret is accepted beside the old one while the secrets file lists both,
// and alone once it lists only the new one; a setting that needs a restart
// is reported, not applied; an invalid file is refused and the settings in
// force stay. No secret reaches the log.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	confPath, secretsPath := filepath.Join(dir, "ordersync.yaml"), filepath.Join(dir, "webhook-secrets")
	oldSecret, newSecret := app.RandomSecret(), app.RandomSecret()
	oldToken, newToken := app.RandomSecret(), app.RandomSecret()
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := func(token, extra string) string {
		return "log_level: info\nworkers: 8\nwebhook_secrets_file: " + secretsPath + "\n" +
			"admin_tokens:\n  - {name: ops, role: operator, token: " + token + "}\n" + extra
	}
	write(secretsPath, oldSecret+"\n")
	write(confPath, config(oldToken, ""))

	cfg := testChildConfig(t, "http://127.0.0.1:1", app.RandomSecret(), "", "--config", confPath)
	cfg.Args = cfg.Args[2:] // the file gives the log level
	c, err := child.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	pid := c.PID()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr := startProbe(t, ctx, c.AdminURL()+"/readyz", 50*time.Millisecond)
	stillUp := func(step string) {
		t.Helper()
		select {
		case <-pr.unready:
			t.Fatalf("%s: /readyz answered %q", step, pr.body)
		default:
		}
		if c.PID() != pid {
			t.Fatalf("%s: the process is not the one started", step)
		}
	}

	client := &http.Client{Timeout: 5 * time.Second}
	n := 0
	webhookStatus := func(secret string) int {
		t.Helper()
		n++
		req, _ := signedWebhook(t, c.WebhookURL(), secret, n)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	adminStatus := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, c.AdminURL()+"/v1/orders", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	expect := func(step string, want map[string]int, got func(string) int) {
		t.Helper()
		for k, w := range want {
			if g := got(k); g != w {
				t.Errorf("%s: %d, want %d", step, g, w)
			}
		}
	}
	readLog := func() string {
		b, err := os.ReadFile(cfg.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// await polls for what a reload brings about: it is applied by the
	// process in its own time after the signal.
	await := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 15 s; log tail:\n%s", what, c.LogTail(2000))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hup := func() {
		t.Helper()
		if err := c.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}

	expect("before any reload, the admin tokens", map[string]int{oldToken: 200, newToken: 401}, adminStatus)
	expect("before any reload, the webhook secrets", map[string]int{oldSecret: 200, newSecret: 401}, webhookStatus)

	// A new admin token, the rotation's overlap, a more verbose log and a
	// setting that needs a restart.
	write(secretsPath, newSecret+"\n"+oldSecret+"\n")
	write(confPath, strings.Replace(config(newToken, ""), "log_level: info\nworkers: 8", "log_level: debug\nworkers: 16", 1))
	hup()
	await("the new admin token accepted", func() bool { return adminStatus(newToken) == http.StatusOK })
	stillUp("after the first reload")
	expect("after the first reload, the admin tokens", map[string]int{oldToken: 401, newToken: 200}, adminStatus)
	expect("during the rotation's overlap, the webhook secrets", map[string]int{oldSecret: 200, newSecret: 200}, webhookStatus)
	for _, want := range []string{"applied=\"[webhook_secrets log_level admin_tokens]\"", "needs_restart=[workers]"} {
		await("the log saying "+want, func() bool { return strings.Contains(readLog(), want) })
	}

	// The overlap ends: only the new secret; a quieter log, whose change
	// is still logged at the level in force before it.
	write(secretsPath, newSecret+"\n")
	write(confPath, strings.Replace(config(newToken, ""), "log_level: info\nworkers: 8", "log_level: warn\nworkers: 16", 1))
	hup()
	await("the old webhook secret refused", func() bool { return webhookStatus(oldSecret) == http.StatusUnauthorized })
	expect("after the overlap, the new secret", map[string]int{newSecret: 200}, webhookStatus)
	want := "applied=\"[webhook_secrets log_level]\""
	await("the log saying "+want, func() bool { return strings.Contains(readLog(), want) })

	// Invalid files: a bad value, then tokens that break the rules. Each
	// is refused whole: the token and secrets in force stay.
	for i, bad := range []string{
		config(oldToken, "upstream_timeout: soon\n"),
		config(oldToken, "  - {name: ops, role: viewer, token: "+app.RandomSecret()+"}\n"),
	} {
		write(confPath, bad)
		hup()
		await("the invalid file refused", func() bool { return strings.Count(readLog(), "reload refused") == i+1 })
		stillUp("after an invalid file")
		expect("after an invalid file, the admin tokens", map[string]int{oldToken: 401, newToken: 200}, adminStatus)
		expect("after an invalid file, the webhook secrets", map[string]int{oldSecret: 401, newSecret: 200}, webhookStatus)
	}
	// A refused reload is also told by the metrics: systemctl reload
	// cannot say it, the signal being sent before the file is read.
	req, _ := http.NewRequest(http.MethodGet, c.AdminURL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+newToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"\nordersync_config_last_reload_successful 0\n", "\nordersync_config_reloads_total{result=\"refused\"} 2\n", "\nordersync_config_reloads_total{result=\"applied\"} 2\n"} {
		if !strings.Contains(string(scraped), want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	stillUp("at the end")
	cancel()
	if err := c.Stop(); err != nil {
		t.Fatalf("SIGTERM after the reloads: %v", err)
	}
	log := readLog()
	for name, secret := range map[string]string{"old token": oldToken, "new token": newToken, "old secret": oldSecret, "new secret": newSecret} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds the %s", name)
		}
	}
}
