// Package sim simulates the payment link service (interface version 2.0) for
// tests, the demo, benchmarks and `ordersync sim`: the checkout and order
// detail endpoints with their validation and problem bodies, the order life
// cycle, signed webhooks delivered like the real deployment delivers them
// (retried, and on demand duplicated, reordered, delayed or dropped), and
// injectable API faults, all reproducible under a seed.
//
// The payment link API requires "Authorization: Bearer <SecretKey>". The
// control API does not: it is the test's side door, never the merchant's,
// and a simulator holds nothing worth protecting.
//
//	POST /_sim/orders/{code}/pay       PENDING → PAID (body: optional buyer)
//	POST /_sim/orders/{code}/cancel    PENDING → CANCELLED
//	POST /_sim/orders/{code}/finalize  PAID → FINALIZED
//	POST /_sim/orders/{code}/reverse   PAID → CANCELLED
//	POST /_sim/expire                  cancel PENDING orders past expiry
//	GET  /_sim/orders[/{code}]         the truth, not counted as a fetch
//	GET  /_sim/stats                   Stats
//	GET|PUT /_sim/faults               Faults, durations as text ("1.5s")
//
// An illegal transition answers 409, an unknown order 404, both with a
// problem body.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersync/ordersync"
)

// Server is the simulated payment link service. It is safe for concurrent
// use.
type Server struct {
	cfg        Config
	log        *slog.Logger
	dice       dice
	faults     atomic.Pointer[Faults]
	authHeader string
	catalogue  map[string]catalogueProduct
	problems   problemBodies
	handler    http.Handler
	hooks      *hookQueue // nil when no WebhookURL is configured

	mu            sync.RWMutex
	orders        map[string]*order
	list          []*order // in creation order
	byStatus      map[ordersync.Status]int
	expiries      expiryHeap
	rng           *rand.Rand // order codes, authorization codes, payment ids
	nextOrderID   int64
	nextProductID int64
	nextForeignID int64 // orderIds of other products' events
	nextSubID     int64 // subscriptionIds

	counters counters

	life     sync.Mutex
	started  bool
	closed   bool
	cancel   context.CancelFunc
	done     chan struct{} // closed by Close: releases hanging requests
	servers  []*http.Server
	wg       sync.WaitGroup
	serveErr []error
}

// order is one order and what the service knows about it beyond its detail.
// Every field but gets is guarded by Server.mu.
type order struct {
	detail    ordersync.Order
	expiresAt time.Time
	// doc is the encoded detail, replaced (never modified) on every change,
	// so GET writes it without encoding or holding the lock.
	doc  []byte
	gets atomic.Int64
}

type catalogueProduct struct {
	Product
	id ordersync.ID
}

// First identifiers handed out. Order ids increase from FirstOrderID.
const (
	FirstOrderID     = 30000
	firstCatalogueID = 10001
	firstProductID   = 880000
	firstForeignID   = 9000000
	firstSubID       = 5000
)

// New builds a simulator. Call Start to run webhook delivery and the expiry
// sweep, and Listen (or Handler) to serve the API.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	seed := uint64(cfg.Seed)
	s := &Server{
		cfg:           cfg,
		log:           cfg.Logger,
		dice:          dice{seed: seed},
		authHeader:    "Bearer " + cfg.SecretKey,
		catalogue:     make(map[string]catalogueProduct, len(cfg.Products)),
		problems:      newProblemBodies(cfg.Language),
		orders:        make(map[string]*order),
		byStatus:      make(map[ordersync.Status]int, len(ordersync.Statuses)),
		rng:           rand.New(rand.NewPCG(seed, splitmix64(seed))),
		nextOrderID:   FirstOrderID,
		nextProductID: firstProductID,
		nextForeignID: firstForeignID,
		nextSubID:     firstSubID,
		done:          make(chan struct{}),
	}
	faults := cfg.Faults
	s.faults.Store(&faults)
	for i, p := range cfg.Products {
		s.catalogue[p.SKU] = catalogueProduct{Product: p, id: ordersync.ID(strconv.Itoa(firstCatalogueID + i))}
	}
	if cfg.WebhookURL != "" {
		s.hooks = newHookQueue(s, cfg)
	}
	s.handler = s.routes()
	return s, nil
}

// Handler serves the payment link API and the control API.
func (s *Server) Handler() http.Handler { return s.handler }

// Seed is the seed in use (Config.Seed, or the one picked for a zero seed).
func (s *Server) Seed() int64 { return s.cfg.Seed }

// SetFaults replaces the faults injected from now on; the zero Faults stops
// them. Events already queued keep the faults they were given.
func (s *Server) SetFaults(f Faults) error {
	f = f.withDefaults()
	if err := f.validate(); err != nil {
		return fmt.Errorf("set faults: %w", err)
	}
	s.faults.Store(&f)
	s.log.Info("faults changed", "faults", f)
	return nil
}

// Faults returns the faults in effect.
func (s *Server) Faults() Faults { return *s.faults.Load() }

// Start runs webhook delivery and the expiry sweep until ctx is done or
// Close is called.
func (s *Server) Start(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	switch {
	case s.closed:
		return errors.New("start simulator: closed")
	case s.started:
		return errors.New("start simulator: already started")
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sweep(ctx)
	}()
	if s.hooks != nil {
		s.hooks.start(ctx, &s.wg)
	}
	return nil
}

// Listen serves the API on addr ("127.0.0.1:0" picks a port) until Close,
// and returns the base URL, e.g. "http://127.0.0.1:41234".
func (s *Server) Listen(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	if err := s.Serve(l); err != nil {
		l.Close()
		return "", err
	}
	return "http://" + l.Addr().String(), nil
}

// Serve serves the API on l in the background until Close.
func (s *Server) Serve(l net.Listener) error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("serve simulator: closed")
	}
	fresh := &freshConns{conns: map[net.Conn]struct{}{}}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState:         fresh.track,
	}
	// Shutdown waits up to 5s for connections that never sent a request
	// (a client's spare dial); close them once the listener is closed.
	srv.RegisterOnShutdown(fresh.closeAll)
	s.servers = append(s.servers, srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve simulator API", "addr", l.Addr().String(), "err", err)
			s.life.Lock()
			s.serveErr = append(s.serveErr, err)
			s.life.Unlock()
		}
	}()
	return nil
}

// ListenAndServe starts the simulator, serves the API on addr until ctx is
// done, then closes it. ready, when not nil, is called with the base URL
// once the listener is open.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(baseURL string)) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	u, err := s.Listen(addr)
	if err != nil {
		s.Close()
		return err
	}
	if ready != nil {
		ready(u)
	}
	<-ctx.Done()
	return s.Close()
}

// Close stops serving (waiting up to 5s for requests in flight; hanging
// requests are released at once), stops delivery and the sweep, and waits
// for every goroutine. Undelivered webhooks are abandoned.
func (s *Server) Close() error {
	s.life.Lock()
	if s.closed {
		s.life.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	servers := s.servers
	cancel := s.cancel
	s.life.Unlock()

	var errs []error
	shutdownCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("shut down simulator API: %w", err))
			srv.Close()
		}
	}
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	if s.hooks != nil {
		s.hooks.close()
	}
	s.life.Lock()
	errs = append(errs, s.serveErr...)
	s.life.Unlock()
	return errors.Join(errs...)
}

// WaitIdle waits until every queued webhook was delivered or given up. It
// returns at once when webhooks are off; it needs Start to make progress.
func (s *Server) WaitIdle(ctx context.Context) error {
	if s.hooks == nil {
		return nil
	}
	return s.hooks.waitIdle(ctx)
}

// freshConns tracks the connections that have not sent a request yet.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (f *freshConns) track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state == http.StateNew {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}

func (s *Server) sweep(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n := s.ExpireDue(); n > 0 {
				s.log.Info("payment links expired", "orders", n)
			}
		}
	}
}
