// Package child runs `ordersync serve` as a separate process over one data
// directory: started, killed with SIGKILL, restarted on the same ports,
// measured (CPU time, peak RSS). The lab and the end-to-end tests of the
// operator binary use it to test the real program the way it is deployed.
package child

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/queue"
)

// RunMainEnv makes a test binary of cmd/ordersync run main() instead of its
// tests, so a test can start `ordersync serve` as a separate process
// without `go build` (see its TestMain).
const RunMainEnv = "ORDERSYNC_TEST_RUN_MAIN"

// Config describes an `ordersync serve` run as a child process: the
// chaos test and the load generator measure the real binary, with its own
// GC settings, and kill it with SIGKILL.
type Config struct {
	// Exe is the ordersync binary: the one the lab found or built, or a
	// test binary of cmd/ordersync (with Env holding RunMainEnv=1).
	Exe string
	// Env is added to the environment. Inherited ORDERSYNC_* variables are
	// dropped so a developer's settings never leak into the child.
	Env []string
	// DataDir holds the child's JetStream store and SQLite file; a restart
	// reuses it.
	DataDir string
	// APIBaseURL, SecretKey and WebhookSecret are passed in the environment,
	// which keeps the secrets out of the process list. WebhookSecret may be
	// empty when the child's Args or Env give the webhook secrets (a config
	// file a test rewrites and reloads).
	APIBaseURL    string
	SecretKey     string
	WebhookSecret string
	// Args are extra `serve` flags (--reconcile-interval 2s, --workers…).
	Args []string
	// LogPath receives the child's stderr, appended across restarts.
	LogPath string
	// ReadyTimeout bounds the wait for /readyz. Default 30s.
	ReadyTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	// Default 30s.
	StopTimeout time.Duration
}

func (c *Config) withDefaults() {
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 30 * time.Second
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 30 * time.Second
	}
}

func (c *Config) validate() error {
	switch {
	case c.Exe == "":
		return errors.New("child: Exe is required")
	case c.DataDir == "":
		return errors.New("child: DataDir is required")
	case c.APIBaseURL == "":
		return errors.New("child: APIBaseURL is required")
	case c.SecretKey == "":
		return errors.New("child: SecretKey is required")
	case c.LogPath == "":
		return errors.New("child: LogPath is required")
	}
	return nil
}

// Ports are the loopback ports of one child.
type Ports struct{ Webhook, Admin, NATS int }

// child is one `ordersync serve` process at a time over one data directory.
// Its ports stay the same across restarts when they are still free, so a
// NATS connection to it reconnects by itself.
type Process struct {
	cfg Config

	mu     sync.Mutex
	ports  Ports
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returned
}

// Start starts the child and waits until it answers /readyz.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Process{cfg: cfg}
	if err := c.start(ctx, false); err != nil {
		return nil, err
	}
	return c, nil
}

// Restart starts the child again on the same data directory after Kill or
// Stop, on the same ports when they are free.
func (c *Process) Restart(ctx context.Context) error {
	c.mu.Lock()
	running := c.cmd != nil
	c.mu.Unlock()
	if running {
		return errors.New("restart child: it is still running")
	}
	return c.start(ctx, true)
}

// start launches the process and waits for readiness. A port taken between
// picking and binding makes the child exit early: it is retried on fresh
// ports a few times. (The taker may answer /readyz itself, another child
// say: waitReady asks the child to hold the admin port too.)
func (c *Process) start(ctx context.Context, samePorts bool) error {
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		if !samePorts || attempt > 0 {
			ports, err := pickPorts(3)
			if err != nil {
				return err
			}
			c.mu.Lock()
			c.ports = Ports{Webhook: ports[0], Admin: ports[1], NATS: ports[2]}
			c.mu.Unlock()
		}
		exitedEarly, err := c.launch(ctx)
		if err == nil {
			return nil
		}
		lastErr = err
		if !exitedEarly || ctx.Err() != nil {
			return err
		}
	}
	return lastErr
}

// launch runs one process and waits for /readyz. exitedEarly reports that
// the process ended by itself before it was ready (a bind failure, say).
func (c *Process) launch(ctx context.Context) (exitedEarly bool, err error) {
	if err := os.MkdirAll(filepath.Dir(c.cfg.LogPath), 0o750); err != nil {
		return false, fmt.Errorf("create child log directory: %w", err)
	}
	logf, err := os.OpenFile(c.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, fmt.Errorf("open child log: %w", err)
	}
	ports := c.Ports()
	args := append([]string{"serve",
		"--data-dir", c.cfg.DataDir,
		"--listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.Webhook)),
		"--admin-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.Admin)),
		"--nats-port", strconv.Itoa(ports.NATS),
	}, c.cfg.Args...)
	cmd := exec.Command(c.cfg.Exe, args...)
	// Nothing probes a child's readiness unless its test does: it stops at
	// once unless Env or Args give a drain.
	cmd.Env = append(childEnviron(), "ORDERSYNC_SHUTDOWN_DRAIN=0")
	cmd.Env = append(cmd.Env, c.cfg.Env...)
	cmd.Env = append(cmd.Env,
		"ORDERSYNC_API_BASE_URL="+c.cfg.APIBaseURL,
		"ORDERSYNC_SECRET_KEY="+c.cfg.SecretKey,
	)
	if c.cfg.WebhookSecret != "" {
		cmd.Env = append(cmd.Env, "ORDERSYNC_WEBHOOK_SECRET="+c.cfg.WebhookSecret)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childSysProcAttr()
	fmt.Fprintf(logf, "---- %s: starting %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		logf.Close()
		return false, fmt.Errorf("start child: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.mu.Unlock()

	if err := c.waitReady(ctx, cmd.Process.Pid, exited); err != nil {
		select {
		case <-exited:
			c.reap()
			return true, fmt.Errorf("child exited before it was ready (%s): %w; log tail:\n%s", cmd.ProcessState, err, c.LogTail(2000))
		default:
			c.Kill()
			return false, fmt.Errorf("child not ready: %w; log tail:\n%s", err, c.LogTail(2000))
		}
	}
	return false, nil
}

// childEnviron is the parent's environment without ORDERSYNC_* settings.
func childEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORDERSYNC_") {
			env = append(env, kv)
		}
	}
	return env
}

// waitReady waits until /readyz answers 200 on the admin port and process
// pid holds that port: a port picked free may be taken before the child
// binds it, by a process that answers /readyz as well (the admin port of
// another child, whose ports were picked at the same time). The child then
// fails to bind and exits, and start retries on fresh ports.
func (c *Process) waitReady(ctx context.Context, pid int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	port := c.Ports().Admin
	url := c.AdminURL() + "/readyz"
	var notOwned error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				owns, err := listensOn(pid, port)
				if owns {
					return nil
				}
				// Kept for the timeout's message; an exit (its /proc gone)
				// is seen below.
				notOwned = err
				if err == nil {
					notOwned = fmt.Errorf("port %d answers but process %d does not hold it", port, pid)
				}
			}
		}
		select {
		case <-exited:
			return errors.New("process exited")
		case <-ctx.Done():
			if notOwned != nil {
				return fmt.Errorf("wait for %s: %w (%w)", url, ctx.Err(), notOwned)
			}
			return fmt.Errorf("wait for %s: %w", url, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reap forgets the exited process.
func (c *Process) reap() {
	c.mu.Lock()
	c.cmd, c.exited = nil, nil
	c.mu.Unlock()
}

// Signal sends sig to the running process.
func (c *Process) Signal(sig os.Signal) error {
	c.mu.Lock()
	cmd := c.cmd
	c.mu.Unlock()
	if cmd == nil {
		return errors.New("signal child: it is not running")
	}
	return cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits until the process is reaped. It does
// nothing when no process runs.
func (c *Process) Kill() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	c.reap()
}

// Stop sends SIGTERM so the child drains, waits up to StopTimeout, then
// kills it. It returns an error when the child did not exit cleanly.
func (c *Process) Stop() error {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(c.cfg.StopTimeout):
		c.Kill()
		return fmt.Errorf("stop child: no exit %s after SIGTERM; killed", c.cfg.StopTimeout)
	}
	c.reap()
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("stop child: %s; log tail:\n%s", cmd.ProcessState, c.LogTail(2000))
	}
	return nil
}

// PID is the running process's id, 0 when none runs.
func (c *Process) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// CPU is the CPU time, user and system, the child has used so far.
func (c *Process) CPU() (time.Duration, error) {
	pid := c.PID()
	if pid == 0 {
		return 0, errors.New("CPU time: the child is not running")
	}
	return processCPU(pid)
}

// PeakRSS is the running process's peak resident set size (VmHWM) in bytes.
func (c *Process) PeakRSS() (int64, error) {
	pid := c.PID()
	if pid == 0 {
		return 0, errors.New("peak RSS: the child is not running")
	}
	return peakRSS(pid)
}

// Ports are the loopback ports of the running process.
func (c *Process) Ports() Ports {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ports
}

// WebhookURL is where webhooks for the child go.
func (c *Process) WebhookURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/webhooks/paymentlink", c.Ports().Webhook)
}

// AdminURL is the base of the child's admin API.
func (c *Process) AdminURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.Ports().Admin) }

// NATSURL reaches the child's embedded NATS server over TCP, logged in
// with the password the child keeps in its data directory (created at its
// first start).
func (c *Process) NATSURL() string {
	userinfo := ""
	if b, err := os.ReadFile(datadir.NATSPasswordFile(c.cfg.DataDir)); err == nil {
		userinfo = url.UserPassword(queue.EmbeddedUser, strings.TrimSpace(string(b))).String() + "@"
	}
	return fmt.Sprintf("nats://%s127.0.0.1:%d", userinfo, c.Ports().NATS)
}

// DatabasePath is the child's SQLite file.
func (c *Process) DatabasePath() string { return datadir.DatabaseFile(c.cfg.DataDir) }

// LogTail returns the last n bytes of the child's log.
func (c *Process) LogTail(n int) string {
	b, err := os.ReadFile(c.cfg.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// pickPorts is PickPorts; a test hands out a port it holds.
var pickPorts = PickPorts

// PickPorts returns n distinct free loopback ports. They are free when
// picked, not reserved: the child's start retries when one is taken.
func PickPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
