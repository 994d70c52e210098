package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
)

// Stack is the simulator and the whole pipeline in one process, on
// loopback ports chosen by the OS, over a data directory of its own: what
// the demo runs, and what the end-to-end tests and benchmarks drive.
type Stack struct {
	// Sim plays the default account's store.
	Sim     *sim.Server
	Program *Program
	SimURL  string
	// SecretKey is the simulator's API key, which the pipeline uses.
	SecretKey string
	// Sims are every store's simulator by account, the default account's
	// (Sim) included: a merchant account is a store of its own at the
	// service, with its own key and webhook secret.
	Sims map[string]*sim.Server
	// SimURLs are their base URLs, by account.
	SimURLs map[string]string

	listeners []net.Listener
	cancel    context.CancelFunc
	done      chan error
}

type StackOptions struct {
	DataDir string
	Workers int
	// Faults and Seed are every simulator's (each further store's seed
	// offset by its place, so that their order codes differ).
	Faults sim.Faults
	Seed   int64
	// Store is the default account's store; zero is sim.DefaultStore.
	Store ordersync.StoreInfo
	// Stores are further accounts, each with a simulator of its own
	// playing its store, configured as the program's accounts.
	Stores    []StackStore
	Logger    *slog.Logger
	Configure func(*Config)
}

// StackStore is a further account of a Stack and the store its simulator
// plays.
type StackStore struct {
	Account string
	Store   ordersync.StoreInfo
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
	s := &Stack{done: make(chan error, 1), Sims: map[string]*sim.Server{}, SimURLs: map[string]string{}}
	// One simulator per store: its listener, key and webhook secret.
	type simStore struct {
		account, url, key, secret string
		store                     ordersync.StoreInfo
	}
	stores := []simStore{{account: ordersync.DefaultAccount, store: opts.Store}}
	for _, st := range opts.Stores {
		stores = append(stores, simStore{account: st.Account, store: st.Store})
	}
	closeListeners := func() {
		for _, ln := range s.listeners {
			_ = ln.Close()
		}
	}
	for i := range stores {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeListeners()
			return nil, fmt.Errorf("simulator listener: %w", err)
		}
		s.listeners = append(s.listeners, ln)
		stores[i].url, stores[i].key, stores[i].secret = "http://"+ln.Addr().String(), RandomSecret(), RandomSecret()
		s.SimURLs[stores[i].account] = stores[i].url
	}
	s.SimURL, s.SecretKey = stores[0].url, stores[0].key

	cfg := DefaultConfig()
	cfg.APIBaseURL, cfg.SecretKey, cfg.WebhookSecrets = stores[0].url, stores[0].key, []string{stores[0].secret}
	if len(stores) > 1 {
		cfg.Accounts = map[string]AccountConfig{}
		for _, st := range stores[1:] {
			cfg.Accounts[st.account] = AccountConfig{APIBaseURL: st.url, SecretKey: st.key, WebhookSecrets: []string{st.secret}}
		}
	}
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
		closeListeners()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	fail := func(err error) (*Stack, error) {
		cancel()
		for _, sv := range s.Sims {
			_ = sv.Close()
		}
		closeListeners()
		s.Program.Close()
		return nil, err
	}
	for i, st := range stores {
		webhookURL := s.Program.WebhookURL()
		if st.account != ordersync.DefaultAccount {
			webhookURL += "/" + st.account
		}
		seed := opts.Seed
		if seed != 0 {
			seed += int64(i)
		}
		sv, err := sim.New(sim.Config{
			SecretKey: st.key, WebhookURL: webhookURL, WebhookSecret: st.secret, Store: st.store,
			Faults: opts.Faults, Seed: seed, Logger: opts.Logger.With("component", "sim", "account", st.account),
		})
		if err != nil {
			return fail(fmt.Errorf("the simulator of %s: %w", st.account, err))
		}
		if err := sv.Start(runCtx); err != nil {
			return fail(err)
		}
		s.Sims[st.account] = sv
		if err := sv.Serve(s.listeners[i]); err != nil {
			return fail(err)
		}
	}
	s.Sim = s.Sims[ordersync.DefaultAccount]
	go func() { s.done <- s.Program.Run(runCtx) }()
	return s, nil
}

// Close stops the simulators, then the pipeline (draining it). The
// simulators go first so their webhook connections are gone before the receiver shuts
// down: http.Server.Shutdown waits up to 5s for a connection that opened
// but has not sent a request yet.
func (s *Stack) Close() error {
	var simErr error
	for _, sv := range s.Sims {
		simErr = errors.Join(simErr, sv.Close())
	}
	s.cancel()
	err := <-s.done
	s.Program.Close()
	return errors.Join(err, simErr)
}
