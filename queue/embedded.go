package queue

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"
)

// SyncPolicy says when the embedded JetStream fsyncs its files: SyncDefault,
// SyncAlways, or an interval written as a Go duration ("1s", see SyncEvery).
// The package documentation says what each survives.
type SyncPolicy string

// The named sync policies.
const (
	// SyncDefault: writes reach the OS at once, fsync every two minutes.
	SyncDefault SyncPolicy = "default"
	// SyncAlways: fsync every write before acknowledging it.
	SyncAlways SyncPolicy = "always"
)

// SyncEvery is the policy that fsyncs every d.
func SyncEvery(d time.Duration) SyncPolicy { return SyncPolicy(d.String()) }

// serverOptions returns the nats-server settings of the policy: a zero
// interval leaves JetStream's default in place.
func (p SyncPolicy) serverOptions() (interval time.Duration, always bool, err error) {
	switch p {
	case "", SyncDefault:
		return 0, false, nil
	case SyncAlways:
		return 0, true, nil
	}
	d, err := time.ParseDuration(string(p))
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("sync policy %q: want %q, %q or a positive duration such as \"1s\"", string(p), SyncDefault, SyncAlways)
	}
	return d, false, nil
}

// EmbeddedConfig configures an in-process NATS server with JetStream.
type EmbeddedConfig struct {
	// StoreDir is where JetStream keeps its files. Required.
	StoreDir string
	// Port is the TCP client port. 0 (the default) opens no listener at
	// all: only in-process connections reach the server, and the standard
	// port stays free for another server. -1 picks a free port.
	Port int
	// Host is the listen address when Port is set; default 127.0.0.1.
	Host string
	// PasswordFile holds the password every client logs in with, as user
	// EmbeddedUser, when Port is set: a TCP port reaches past the webhook
	// signature, so it never opens without one. A missing file is created
	// owner-only with a random password, which later starts reuse. Default
	// StoreDir/nats-password.
	PasswordFile string
	// Sync is the fsync policy; default SyncDefault.
	Sync SyncPolicy
	// MaxPayload is the largest message the server accepts; default 8 MiB,
	// room for a webhook body of the receiver's largest size plus headers.
	MaxPayload int32
	// StartTimeout bounds the wait for the server to be ready; default 10s.
	StartTimeout time.Duration
	// RecoverInterval is how often, after a failed store write (a full
	// disk), the store directory is probed for room to reload JetStream;
	// default 1s.
	RecoverInterval time.Duration
	Logger          *slog.Logger
}

func (c *EmbeddedConfig) withDefaults() {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.PasswordFile == "" {
		c.PasswordFile = filepath.Join(c.StoreDir, "nats-password")
	}
	if c.Sync == "" {
		c.Sync = SyncDefault
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = 8 << 20
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.RecoverInterval == 0 {
		c.RecoverInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *EmbeddedConfig) validate() error {
	if c.StoreDir == "" {
		return errors.New("embedded NATS: StoreDir is required")
	}
	if c.Port < -1 || c.Port > 65535 {
		return fmt.Errorf("embedded NATS: Port %d out of range (0 for none, -1 for any free port)", c.Port)
	}
	if c.MaxPayload < 0 {
		return fmt.Errorf("embedded NATS: MaxPayload %d must not be negative", c.MaxPayload)
	}
	if _, _, err := c.Sync.serverOptions(); err != nil {
		return fmt.Errorf("embedded NATS: Sync: %w", err)
	}
	return nil
}

// EmbeddedUser is the user clients of the embedded server's TCP port log
// in as, with the password in EmbeddedConfig.PasswordFile.
const EmbeddedUser = "ordersync"

// Embedded is a NATS server with JetStream running inside this process.
type Embedded struct {
	srv      *server.Server
	logger   *slog.Logger
	listen   bool
	storeDir string
	// writeErr is the server's log line of a failed store write, nil
	// while JetStream takes writes; wake starts recoverLoop, stop and
	// recovering end it.
	writeErr   atomic.Pointer[string]
	wake, stop chan struct{}
	stopOnce   sync.Once
	recovering sync.WaitGroup
	// password is EmbeddedUser's; "" when the server has no port and
	// takes in-process connections only.
	password string
}

// StartEmbedded starts the server and waits until it accepts connections.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded NATS: create store dir: %w", err)
	}
	interval, always, _ := cfg.Sync.serverOptions()
	opts := &server.Options{
		ServerName:   "ordersync-embedded",
		JetStream:    true,
		StoreDir:     cfg.StoreDir,
		SyncInterval: interval,
		SyncAlways:   always,
		MaxPayload:   cfg.MaxPayload,
		NoSigs:       true,
		NoLog:        false,
		// The server's first PING to a client comes 2 s after it connects
		// unless this is set, and a handshake still unanswered then (the
		// password's bcrypt check on a starved machine) fails in nats.go
		// with "expected 'PONG', got 'PING'". A dead client is still found
		// at the regular ping interval.
		DisableShortFirstPing: true,
	}
	var password string
	if cfg.Port == 0 {
		opts.DontListen = true
	} else {
		opts.Host = cfg.Host
		opts.Port = cfg.Port
		var err error
		if password, err = loadOrCreatePassword(cfg.PasswordFile); err != nil {
			return nil, fmt.Errorf("embedded NATS: %w", err)
		}
		// The server keeps a bcrypt hash, as it advises for passwords in
		// its configuration.
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS: hash password: %w", err)
		}
		opts.Users = []*server.User{{Username: EmbeddedUser, Password: string(hash)}}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: configure: %w", err)
	}
	// The caller names the component; the server's own lines say so.
	e := &Embedded{srv: srv, logger: cfg.Logger, listen: cfg.Port != 0, password: password, storeDir: cfg.StoreDir,
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	srv.SetLoggerV2(&serverLogger{l: cfg.Logger.With("source", "nats-server"), onError: func(line string) {
		if storeWriteFailed(line) {
			e.noteWriteErr(line)
		}
	}}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(cfg.StartTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("embedded NATS: not ready within %s", cfg.StartTimeout)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("embedded NATS: JetStream did not start (see the server log)")
	}
	e.recovering.Go(func() { e.recoverLoop(cfg.RecoverInterval) })
	if e.listen {
		e.logger.Info("embedded NATS started", "store_dir", cfg.StoreDir, "sync", string(cfg.Sync), "client_url", e.ClientURL(),
			"user", EmbeddedUser, "password_file", cfg.PasswordFile)
	} else {
		e.logger.Info("embedded NATS started", "store_dir", cfg.StoreDir, "sync", string(cfg.Sync), "client_url", "")
	}
	return e, nil
}

// loadOrCreatePassword reads the password in path, or creates the file,
// owner-only, with a new random one.
func loadOrCreatePassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if p := strings.TrimSpace(string(b)); p != "" {
			return p, nil
		}
		return "", fmt.Errorf("password file %s is empty (delete it to have a new password generated)", path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read password file: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create password file: %w", err)
	}
	if _, err := f.WriteString(p + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write password file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write password file: %w", err)
	}
	return p, nil
}

// embeddedConnectTimeout bounds the in-process connection's handshake.
const embeddedConnectTimeout = 15 * time.Second

// Connect opens an in-process connection to the server: no socket, no TCP
// port needed. The connection does not reconnect: it lives as long as the
// server.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	logger := e.logger.With("conn", name)
	opts := []nats.Option{
		nats.InProcessServer(e.srv),
		nats.Name(name),
		nats.NoReconnect(),
		// The handshake crosses no network, so only a starved machine
		// delays it, and the client's default of 2 s is too short for one.
		nats.Timeout(embeddedConnectTimeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("NATS in-process connection lost", "err", err)
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			logger.Warn("NATS asynchronous error", "err", err)
		}),
	}
	if e.password != "" {
		opts = append(opts, nats.UserInfo(EmbeddedUser, e.password))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to embedded NATS: %w", err)
	}
	return nc, nil
}

// ClientURL is the URL other processes connect to, or "" when the server
// has no TCP listener.
func (e *Embedded) ClientURL() string {
	if !e.listen {
		return ""
	}
	return e.srv.ClientURL()
}

// Shutdown stops the server and waits until it has stopped and flushed its
// files. Connections to it are closed.
func (e *Embedded) Shutdown() {
	e.stopOnce.Do(func() { close(e.stop) })
	e.recovering.Wait()
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.logger.Info("embedded NATS stopped")
}

// serverLogger hands the server's log lines to slog.
type serverLogger struct {
	l *slog.Logger
	// onError sees every error line.
	onError func(line string)
}

func (s *serverLogger) Noticef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Warnf(format string, v ...any)   { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Fatalf(format string, v ...any)  { s.l.Error(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Errorf(format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	s.onError(line)
	s.l.Error(line)
}
func (s *serverLogger) Debugf(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Tracef(format string, v ...any) {}

// storeWriteFailed says whether a line of the server's log reports a
// failed write to a stream's files. After one, the file store returns that
// error for every later write ("always return previous write errors"),
// without answering the publisher, until the stream is loaded again; the
// log is the only place the server says so.
func storeWriteFailed(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "critical write error") || strings.Contains(l, "failed to store a msg")
}

// noteWriteErr records a failed store write and wakes the recovery.
func (e *Embedded) noteWriteErr(line string) {
	if e.writeErr.CompareAndSwap(nil, &line) {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// WriteErr is nil unless JetStream's store failed a write (a full disk)
// and has not been reloaded since: until then no stream takes a message.
func (e *Embedded) WriteErr() error {
	if line := e.writeErr.Load(); line != nil {
		return fmt.Errorf("embedded JetStream failed a write and refuses every later one until it is reloaded, when the disk has room: %s", *line)
	}
	return nil
}

// recoverLoop reloads JetStream after a failed write, once a probe file
// of recoverProbeBytes can be written and synced in the store directory.
// Reloading reads every stream back from its files, so what was
// acknowledged stays; in-process connections stay open, and requests in
// flight meanwhile fail and are retried by their callers.
func (e *Embedded) recoverLoop(interval time.Duration) {
	for {
		select {
		case <-e.stop:
			return
		case <-e.wake:
		}
		t := time.NewTicker(interval)
		for e.writeErr.Load() != nil {
			if err := probeRoom(e.storeDir); err == nil {
				if err := e.resetJetStream(); err != nil {
					e.logger.Error("embedded JetStream: reload after a write error failed; trying again", "err", err)
				} else {
					e.writeErr.Store(nil)
					e.logger.Info("embedded JetStream reloaded after a write error: streams take messages again")
					break
				}
			}
			select {
			case <-e.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		t.Stop()
	}
}

// recoverProbeBytes is what the disk must take before JetStream is
// reloaded: room for its index files and the first writes after.
const recoverProbeBytes = 4 << 20

// probeRoom writes and syncs recoverProbeBytes in dir, then removes them.
func probeRoom(dir string) error {
	f, err := os.CreateTemp(dir, ".room-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, recoverProbeBytes)); err != nil {
		return err
	}
	return f.Sync()
}

// resetJetStream stops JetStream and starts it again on the same store,
// every stream reloaded from its files.
func (e *Embedded) resetJetStream() error {
	cfg := e.srv.JetStreamConfig()
	if cfg == nil {
		return errors.New("embedded NATS: JetStream not running")
	}
	if err := e.srv.ShutdownJetStream(); err != nil {
		return fmt.Errorf("embedded NATS: stop JetStream: %w", err)
	}
	// The running configuration names the store's jetstream subdirectory,
	// which EnableJetStream appends again.
	cfg.StoreDir = filepath.Dir(cfg.StoreDir)
	if err := e.srv.EnableJetStream(cfg); err != nil {
		return fmt.Errorf("embedded NATS: start JetStream again: %w", err)
	}
	return nil
}
