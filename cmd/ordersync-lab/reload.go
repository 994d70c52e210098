package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/webhook"
)

// reloadOptions size a reload run.
type reloadOptions struct {
	// Phase is how long webhooks and admin requests flow between reloads.
	Phase time.Duration
	// MinPhase prolongs each phase until this much traffic met it: on a
	// loaded machine a phase's time alone may carry a handful of requests.
	MinPhase   struct{ Webhooks, Admin, Probes int64 }
	Senders    int
	ProbeEvery time.Duration
	Keep       bool
	exe        string
}

func defaultReloadOptions() reloadOptions {
	return reloadOptions{Phase: 10 * time.Second, Senders: 4, ProbeEvery: 100 * time.Millisecond}
}

func newReloadCommand() *cobra.Command {
	opts := defaultReloadOptions()
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Reload the pipeline's settings with SIGHUP under load and prove it never goes down",
		Long: `reload runs ordersync serve from a config file (an admin token, a webhook
secrets file) while --senders clients post signed webhooks and admin
requests continuously and a probe polls /readyz every --probe-every. It
rewrites the files and sends SIGHUP four times, letting traffic flow for
--phase after each: a new admin token and a rotated webhook secret with
both secrets listed (the rotation's overlap), then the new secret alone,
then two invalid files. It passes only if every reload took effect (the
new token and secrets accepted, the retired ones refused), each invalid
file was refused with the settings in force kept, every webhook signed
with a secret in force was answered 2xx and every one signed with a
retired secret 401, no request met a connection error, /readyz never
said not ready and the process was the same throughout.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			rep, err := runReload(cmd.Context(), cmd.OutOrStdout(), opts)
			return verdict("reload", rep, err)
		}),
	}
	f := cmd.Flags()
	f.DurationVar(&opts.Phase, "phase", opts.Phase, "how long traffic flows after each reload")
	f.IntVar(&opts.Senders, "senders", opts.Senders, "clients posting webhooks at once")
	f.DurationVar(&opts.ProbeEvery, "probe-every", opts.ProbeEvery, "the /readyz probe interval")
	f.BoolVar(&opts.Keep, "keep", false, "keep the data directory and the pipeline's log")
	return cmd
}

// reloadReport is what the reloads did to the traffic.
type reloadReport struct {
	Webhooks, Admin   int64 // requests sent
	Refused, Expected int64 // accepted or refused as the settings in force say
	Problems          []string
	Probes            int64
}

func (r *reloadReport) OK() bool { return len(r.Problems) == 0 }

func (r *reloadReport) fail(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// reloadRun is the state of one reload run.
type reloadRun struct {
	c       *child.Process
	logPath string
	rep     reloadReport
	client  *http.Client
	n       atomic.Int64
	mu      sync.Mutex
	wrong   map[string]int // what went wrong → how often
	// settings guards what follows: a sender holds it for reading over
	// each request, so set waits for the requests sent under the
	// settings it replaces.
	settings   sync.RWMutex
	accept     []string // webhook secrets to be answered 2xx now
	retired    []string // webhook secrets to be answered 401 now
	token      string   // admin token to be answered 200 now
	oldToken   string   // admin token to be answered 401 now
	webhooks   atomic.Int64
	adminCalls atomic.Int64
}

func runReload(ctx context.Context, out io.Writer, opts reloadOptions) (rep *reloadReport, err error) {
	dir, err := os.MkdirTemp("", "ordersync-reload-")
	if err != nil {
		return nil, err
	}
	r := &reloadRun{logPath: filepath.Join(dir, "ordersync.log"), client: &http.Client{Timeout: 10 * time.Second}, wrong: map[string]int{}}
	defer func() {
		if opts.Keep || err != nil || !r.rep.OK() {
			fmt.Fprintf(out, "kept: %s (the pipeline's log: %s)\n", dir, r.logPath)
			return
		}
		os.RemoveAll(dir)
	}()
	confPath, secretsPath := filepath.Join(dir, "ordersync.yaml"), filepath.Join(dir, "webhook-secrets")
	oldSecret, newSecret := app.RandomSecret(), app.RandomSecret()
	oldToken, newToken := app.RandomSecret(), app.RandomSecret()
	write := func(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }
	config := func(token, extra string) string {
		return "log_level: info\nwebhook_secrets_file: " + secretsPath + "\n" +
			"admin_tokens:\n  - {name: ops, role: operator, token: " + token + "}\n" + extra
	}
	if err := errors.Join(write(secretsPath, oldSecret+"\n"), write(confPath, config(oldToken, ""))); err != nil {
		return nil, err
	}
	// Nothing is fetched: the webhooks are for orders no upstream knows,
	// and only the receiver and the admin API are under test.
	r.c, err = child.Start(ctx, child.Config{
		Exe: opts.exe, DataDir: filepath.Join(dir, "data"), LogPath: r.logPath,
		APIBaseURL: "http://127.0.0.1:1", SecretKey: app.RandomSecret(), Args: []string{"--config", confPath},
	})
	if err != nil {
		return nil, err
	}
	defer r.c.Kill()
	pid := r.c.PID()
	fmt.Fprintf(out, "ordersync-lab reload: pipeline pid %d, %d senders, a probe every %s, %s of traffic after each reload\n", pid, opts.Senders, opts.ProbeEvery, opts.Phase)
	r.set([]string{oldSecret}, []string{newSecret}, oldToken, newToken)

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var unready atomic.Value
	wg.Go(func() { r.probe(runCtx, opts.ProbeEvery, &unready) })
	for range opts.Senders {
		wg.Go(func() { r.send(runCtx) })
	}
	defer func() { stop(); wg.Wait() }()

	probes := func() int64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.rep.Probes
	}
	flow := func(step string) error {
		w0, a0, p0 := r.webhooks.Load(), r.adminCalls.Load(), probes()
		want := opts.MinPhase
		for end := time.Now().Add(opts.Phase); time.Now().Before(end) ||
			r.webhooks.Load()-w0 < want.Webhooks || r.adminCalls.Load()-a0 < want.Admin || probes()-p0 < want.Probes; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		fmt.Fprintf(out, "%s: %d webhooks, %d admin requests so far\n", step, r.webhooks.Load(), r.adminCalls.Load())
		return nil
	}
	hup := func(step string, until func() bool) error {
		if err := r.c.Signal(syscall.SIGHUP); err != nil {
			return err
		}
		deadline := time.Now().Add(15 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				r.rep.fail("%s: not in effect 15 s after SIGHUP", step)
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}
	if err := flow("before any reload"); err != nil {
		return nil, err
	}
	// A new token, the rotation's overlap. Meanwhile only what both the
	// old and the new settings accept is sent.
	r.set([]string{oldSecret}, nil, "", "")
	if err := errors.Join(write(secretsPath, newSecret+"\n"+oldSecret+"\n"), write(confPath, config(newToken, ""))); err != nil {
		return nil, err
	}
	if err := hup("the new admin token", func() bool { return r.adminStatus(newToken) == http.StatusOK }); err != nil {
		return nil, err
	}
	r.set([]string{oldSecret, newSecret}, nil, newToken, oldToken)
	if err := flow("a new admin token, the old and the new webhook secret"); err != nil {
		return nil, err
	}
	// The overlap ends.
	r.set([]string{newSecret}, nil, newToken, oldToken)
	if err := write(secretsPath, newSecret+"\n"); err != nil {
		return nil, err
	}
	if err := hup("the old webhook secret retired", func() bool { return r.webhookStatus(oldSecret) == http.StatusUnauthorized }); err != nil {
		return nil, err
	}
	r.set([]string{newSecret}, []string{oldSecret}, newToken, oldToken)
	if err := flow("the new webhook secret alone"); err != nil {
		return nil, err
	}
	// Invalid files: each refused whole, the settings in force kept.
	for i, bad := range []string{config(oldToken, "upstream_timeout: soon\n"), config(oldToken, "  - {name: ops, role: viewer, token: "+app.RandomSecret()+"}\n")} {
		if err := write(confPath, bad); err != nil {
			return nil, err
		}
		if err := hup("an invalid file refused", func() bool { return strings.Count(r.readLog(), "reload refused") == i+1 }); err != nil {
			return nil, err
		}
		if err := flow(fmt.Sprintf("invalid file %d refused", i+1)); err != nil {
			return nil, err
		}
	}
	stop()
	wg.Wait()
	if v, _ := unready.Load().(string); v != "" {
		r.rep.fail("/readyz answered %s", v)
	}
	if r.c.PID() != pid {
		r.rep.fail("the process is not the one started (pid %d, now %d)", pid, r.c.PID())
	}
	if err := r.c.Stop(); err != nil {
		r.rep.fail("SIGTERM after the reloads: %v", err)
	}
	r.rep.Webhooks, r.rep.Admin = r.webhooks.Load(), r.adminCalls.Load()
	for what, n := range r.wrong {
		r.rep.fail("%d requests: %s", n, what)
	}
	log := r.readLog()
	for name, secret := range map[string]string{"old token": oldToken, "new token": newToken, "old secret": oldSecret, "new secret": newSecret} {
		if strings.Contains(log, secret) {
			r.rep.fail("the log holds the %s", name)
		}
	}
	fmt.Fprintf(out, "reload: %d webhooks and %d admin requests sent through 4 reloads, %d probes\n", r.rep.Webhooks, r.rep.Admin, r.rep.Probes)
	if !r.rep.OK() {
		fmt.Fprintf(out, "  reload: FAIL (%s)\n", strings.Join(r.rep.Problems, "; "))
	} else {
		fmt.Fprintln(out, "  reload: PASS")
	}
	return &r.rep, nil
}

// set says what the settings in force accept and refuse; an empty token
// sends no admin requests (a reload of the tokens under way).
func (r *reloadRun) set(accept, retired []string, token, oldToken string) {
	r.settings.Lock()
	defer r.settings.Unlock()
	r.accept, r.retired, r.token, r.oldToken = accept, retired, token, oldToken
}

// send posts webhooks and admin requests until ctx ends, each judged by
// the settings in force when it was sent.
func (r *reloadRun) send(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		r.settings.RLock()
		secret, want := r.accept[i%len(r.accept)], http.StatusOK
		if len(r.retired) > 0 && i%5 == 4 {
			secret, want = r.retired[i%len(r.retired)], http.StatusUnauthorized
		}
		r.judge("webhook", want, r.webhookStatus(secret))
		r.webhooks.Add(1)
		if r.token != "" && i%10 == 0 {
			r.judge("admin request with the token in force", http.StatusOK, r.adminStatus(r.token))
			r.judge("admin request with the retired token", http.StatusUnauthorized, r.adminStatus(r.oldToken))
			r.adminCalls.Add(2)
		}
		r.settings.RUnlock()
	}
}

func (r *reloadRun) judge(what string, want, got int) {
	if got == want {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if got == 0 {
		r.wrong["a connection error on a "+what]++
		return
	}
	r.wrong[fmt.Sprintf("%s answered %d, want %d", what, got, want)]++
}

// webhookStatus posts a webhook signed with secret: its status, 0 for a
// connection error.
func (r *reloadRun) webhookStatus(secret string) int {
	n := r.n.Add(1)
	body := fmt.Appendf(nil, `{"orderId":"%d","orderReference":"reload-%d","orderType":"FASTLINK_CHARGE","description":"x","metadata":null,"level":"Info","type":"Created"}`, n, n)
	req, err := http.NewRequest(http.MethodPost, r.c.WebhookURL(), bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
	return r.do(req)
}

func (r *reloadRun) adminStatus(token string) int {
	req, err := http.NewRequest(http.MethodGet, r.c.AdminURL()+"/v1/orders", nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return r.do(req)
}

func (r *reloadRun) do(req *http.Request) int {
	resp, err := r.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// probe polls /readyz until ctx ends and keeps the first answer other
// than 200 in unready.
func (r *reloadRun) probe(ctx context.Context, every time.Duration, unready *atomic.Value) {
	// A reload must not make /readyz refuse or hang, but a loaded machine
	// can stall the whole pipeline for seconds, reload or not: a probe
	// counts as no answer only after 5 s.
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.mu.Lock()
		r.rep.Probes++
		r.mu.Unlock()
		resp, err := client.Get(r.c.AdminURL() + "/readyz")
		status := fmt.Sprintf("no answer (%v)", err)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				continue
			}
			status = fmt.Sprintf("%d %q", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		if ctx.Err() == nil {
			unready.CompareAndSwap(nil, status)
		}
	}
}

func (r *reloadRun) readLog() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}
