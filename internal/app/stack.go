package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/ordersync/ordersync/sim"
)

// Stack is the simulator and the whole pipeline in one process, on
// loopback ports chosen by the OS, over a data directory of its own: what
// the demo runs, and what the end-to-end tests and benchmarks drive.
type Stack struct {
	Sim     *sim.Server
	Program *Program
	SimURL  string
	// SecretKey is the simulator's API key, which the pipeline uses.
	SecretKey string

	simLn  net.Listener
	cancel context.CancelFunc
	done   chan error
}

type StackOptions struct {
	DataDir   string
	Workers   int
	Faults    sim.Faults
	Seed      int64
	Logger    *slog.Logger
	Configure func(*Config)
}

func RandomSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StartStack starts the simulator, then the pipeline pointed at it, then
// tells the simulator where to post webhooks.
func StartStack(ctx context.Context, opts StackOptions) (_ *Stack, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultConfig().Workers
	}
	s := &Stack{done: make(chan error, 1)}
	if s.simLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("simulator listener: %w", err)
	}
	s.SimURL = "http://" + s.simLn.Addr().String()
	secretKey, webhookSecret := RandomSecret(), RandomSecret()
	s.SecretKey = secretKey

	cfg := DefaultConfig()
	cfg.APIBaseURL, cfg.SecretKey, cfg.WebhookSecrets = s.SimURL, secretKey, []string{webhookSecret}
	cfg.DataDir = opts.DataDir
	cfg.DatabaseURL = opts.DataDir + "/ordersync.db"
	cfg.Listen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Workers = opts.Workers
	// The simulator sets no rate limit: a Configure that tests a fixed cap
	// sets one.
	cfg.UpstreamRPS = 0
	// Nothing probes a stack's readiness: it stops at once.
	cfg.ShutdownDrain = 0
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	if s.Program, err = NewProgram(ctx, cfg, opts.Logger); err != nil {
		_ = s.simLn.Close()
		return nil, err
	}
	simCfg := sim.Config{
		SecretKey: secretKey, WebhookURL: s.Program.WebhookURL(), WebhookSecret: webhookSecret,
		Faults: opts.Faults, Seed: opts.Seed, Logger: opts.Logger.With("component", "sim"),
	}
	if s.Sim, err = sim.New(simCfg); err != nil {
		s.Program.Close()
		_ = s.simLn.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	if err := s.Sim.Start(runCtx); err != nil {
		cancel()
		s.Program.Close()
		_ = s.simLn.Close()
		return nil, err
	}
	if err := s.Sim.Serve(s.simLn); err != nil {
		cancel()
		s.Program.Close()
		_ = s.Sim.Close()
		return nil, err
	}
	go func() { s.done <- s.Program.Run(runCtx) }()
	return s, nil
}

// Close stops the simulator, then the pipeline (draining it). The simulator
// goes first so its webhook connections are gone before the receiver shuts
// down: http.Server.Shutdown waits up to 5s for a connection that opened
// but has not sent a request yet.
func (s *Stack) Close() error {
	simErr := s.Sim.Close()
	s.cancel()
	err := <-s.done
	s.Program.Close()
	return errors.Join(err, simErr)
}
