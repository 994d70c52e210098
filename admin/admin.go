// Package admin is ordersync's back-office listener: the JSON API
// (admin/api) and the console (admin/console) composed on one address,
// loopback by default, apart from the public webhook receiver, with the
// operational endpoints (/metrics, /healthz, /readyz, the operators'
// pprof).
//
// What a request may do is decided here for both surfaces: the guard
// (Origin, Host, content type), who asks (a bearer token, a console
// session, loopback without tokens) and their role, and the audit record
// of every action. The handlers of each resource are admin/api's, the
// pages admin/console's; both reach this package only through the office
// they are given. Client is the API's client, for the CLI, the demo and
// the lab.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/admin/console"
	"github.com/ordersync/ordersync/internal/proxy"
	"github.com/ordersync/ordersync/internal/quietlog"
	collect "github.com/ordersync/ordersync/metrics"
)

// Config configures the listener. Orders is required; an endpoint whose
// dependency is nil answers 501.
type Config struct {
	// Account is the account served when a request names none.
	Account string
	// Stores are the accounts the deployment serves, each a store of the
	// back office, the default first: what a request's account parameter
	// may name (api.ChooseStore). Default: Account alone.
	Stores      []string
	Orders      ordersync.MirrorReader
	DeadLetters ordersync.DeadLetters
	Follower    ordersync.Follower
	Replayer    ordersync.Replayer
	// ReplayJobs and OrderCodes serve the console's Dead letters pages, as
	// console.Config says.
	ReplayJobs ordersync.ReplayJobs
	OrderCodes ordersync.OrderCodesResolver
	// Metrics serves /metrics.
	Metrics http.Handler
	// Ready reports whether the service can take work (database and queue
	// reachable); /readyz answers 503 with its error otherwise.
	Ready func(ctx context.Context) error
	// Endpoints, DeliveryDeadLetters and Deliverer serve /v1/endpoints and
	// /v1/delivery-dead-letters; SecretGrace is how long a rotated
	// endpoint secret keeps signing.
	Endpoints           ordersync.Endpoints
	DeliveryDeadLetters ordersync.DeliveryDeadLetters
	Deliverer           ordersync.Deliverer
	SecretGrace         time.Duration
	// Tokens, when any, are the bearer tokens every API request but
	// /healthz and /readyz must carry, and the tokens the console signs in
	// with; each token's role decides whether it may act. Several allow
	// rotation. Without any, the listener answers only requests addressed
	// to a loopback name (see guard), as the operator "loopback".
	Tokens []ordersync.AdminToken
	// Audit records every action (and serves GET /v1/audit); nil records
	// nothing.
	Audit ordersync.AuditLog
	// Sessions keeps the console's sessions; the console cannot sign in
	// without it.
	Sessions ordersync.ConsoleSessions
	// SessionTTL is how long a console session lasts; default
	// console.DefaultSessionTTL.
	SessionTTL time.Duration
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (for the sign-in limiter) and whose X-Forwarded-Proto: https makes
	// the console's cookies Secure.
	TrustedProxies proxy.Trusted
	Logger         *slog.Logger
	// Registerer takes the API's own collectors; nil registers none.
	Registerer prometheus.Registerer
	// Clock stamps audit records and sessions; default time.Now.
	Clock func() time.Time
	// Exports serves /v1/exports/…; ExportBatchSize is how many orders one
	// of its reads takes (default 1,000) and MaxExports how many exports run
	// at once (default api.DefaultMaxExports).
	Exports ordersync.OrderExporter
	// Reports serves /v1/reports/….
	Reports ordersync.Reports
	// Overview serves the console's home; without it the home only
	// links to the pages.
	Overview ordersync.OverviewReader
	// OverviewRefresh is how often the Overview's script reads the figures
	// again; default console.DefaultOverviewRefresh.
	OverviewRefresh time.Duration
	ExportBatchSize int
	MaxExports      int
}

func (c *Config) withDefaults() Config {
	cfg := *c
	if cfg.Account == "" {
		cfg.Account = ordersync.DefaultAccount
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return cfg
}

func (c *Config) validate() error {
	if c.Orders == nil {
		return errors.New("admin: Config.Orders is required")
	}
	if err := ordersync.ValidateAdminTokens(c.Tokens); err != nil {
		return fmt.Errorf("admin: Config.Tokens: %w", err)
	}
	return nil
}

// Server is the back office's listener: the API and the console behind
// one guard.
type Server struct {
	cfg Config
	mux *router
	// stores are the stores served, cfg.Account the default.
	stores api.Stores
	// api and console are the two surfaces it composes.
	api     *api.Handlers
	console *console.Console
	// tokenSet holds cfg.Tokens until SetTokens replaces them; read it
	// through Server.tokens.
	tokenSet atomic.Pointer[[]ordersync.AdminToken]
	// quiet logs failures that repeat per request (a failed audit write,
	// a store that does not answer) once, then summed up per interval.
	quiet *quietlog.Log
	// auditFailures counts the audit records that could not be written.
	auditFailures prometheus.Counter
}

// New returns the listener's handler.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: newRouter(), stores: api.Stores{Default: cfg.Account, Names: cfg.Stores}, quiet: quietlog.New(cfg.Logger, quietlog.DefaultInterval),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_admin_audit_failures_total",
			Help: "Audit records of admin actions that could not be written (the actions happened).",
		})}
	if err := collect.RegisterAll(cfg.Registerer, collect.Of(&s.auditFailures)); err != nil {
		return nil, fmt.Errorf("admin: register metrics: %w", err)
	}
	s.tokenSet.Store(&cfg.Tokens)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", cfg.Metrics)
	}
	s.api = api.New(api.Deps{Stores: s.stores, Orders: cfg.Orders, Follower: cfg.Follower, DeadLetters: cfg.DeadLetters, Replayer: cfg.Replayer,
		Audit: cfg.Audit, Clock: cfg.Clock, Endpoints: cfg.Endpoints, DeliveryDeadLetters: cfg.DeliveryDeadLetters,
		Deliverer: cfg.Deliverer, SecretGrace: cfg.SecretGrace, Reports: cfg.Reports,
		Exports: cfg.Exports, ExportBatchSize: cfg.ExportBatchSize, MaxExports: cfg.MaxExports, Logger: cfg.Logger}, office{s})
	s.api.Routes(s.mux)
	s.console = console.New(console.Config{API: s.api, Stores: s.stores, Orders: cfg.Orders, DeadLetters: cfg.DeadLetters,
		Follower: cfg.Follower, Replayer: cfg.Replayer, ReplayJobs: cfg.ReplayJobs, OrderCodes: cfg.OrderCodes,
		Endpoints: cfg.Endpoints, DeliveryDeadLetters: cfg.DeliveryDeadLetters, Deliverer: cfg.Deliverer, Audit: cfg.Audit,
		AuditActions: actionNames(), Sessions: cfg.Sessions, SessionTTL: cfg.SessionTTL, TrustedProxies: cfg.TrustedProxies,
		Logger: cfg.Logger, Clock: cfg.Clock, Exports: cfg.Exports, Reports: cfg.Reports, Overview: cfg.Overview,
		OverviewRefresh: cfg.OverviewRefresh}, office{s})
	s.console.Routes(s.mux)
	s.routePprof()
	return s, nil
}

// ServeHTTP implements http.Handler: the guard first, then who asks (a
// bearer token for the API, a session for the console, loopback without
// tokens), then the route, as that principal's role allows.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r) {
		return
	}
	switch {
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz":
		s.mux.ServeHTTP(w, r)
	case console.IsPath(r.URL.Path):
		s.console.Serve(w, r)
	case len(s.tokens()) == 0:
		s.serveAs(w, r, ordersync.Loopback, ordersync.ViaAPI)
	case console.IsDownload(r) && r.Header.Get("Authorization") == "":
		s.console.ServeDownload(w, r)
	default:
		t, ok := s.bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ordersync"`)
			api.WriteProblem(w, http.StatusUnauthorized, "a valid bearer token is required", nil)
			return
		}
		s.serveAs(w, r, ordersync.Principal{Name: t.Name, Role: t.Role}, ordersync.ViaAPI)
	}
}

// tokens are the admin tokens in force.
func (s *Server) tokens() []ordersync.AdminToken { return *s.tokenSet.Load() }

// SetTokens replaces the admin tokens, valid as Config.Tokens: the next
// request is authorised with them, and a console session of a token no
// longer among them ends at its next request. Without tokens the listener
// answers loopback names only, as at start.
func (s *Server) SetTokens(tokens []ordersync.AdminToken) error {
	if err := ordersync.ValidateAdminTokens(tokens); err != nil {
		return fmt.Errorf("admin: tokens: %w", err)
	}
	tokens = slices.Clone(tokens)
	s.tokenSet.Store(&tokens)
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			// Not an error of the request: any reason not to be ready is a
			// 503 naming it, which is what a load balancer reads.
			api.WriteProblem(w, http.StatusServiceUnavailable, "not ready: "+err.Error(), nil)
			return
		}
	}
	api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// WaitReplayJob waits until the console's replay job id, which this
// process runs, has ended and returns its record from the mirror; false
// when the mirror has no such job (console.Console.WaitReplayJob).
func (s *Server) WaitReplayJob(ctx context.Context, id int64) (ordersync.ReplayJob, bool, error) {
	return s.console.WaitReplayJob(ctx, id)
}

// Close stops the console's running replay job, if any, and waits for it
// (console.Console.Close). Call it before closing what the Replayer
// publishes to.
func (s *Server) Close() {
	s.quiet.Close()
	s.console.Close()
}
