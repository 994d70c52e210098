// Package console is the back office's console: server-rendered pages
// from embedded templates (Templates, Static), one file per page, signed
// in by session cookie with a CSRF token on every form, each action
// answered by a redirect and each refusal by a page. admin routes it
// beside the JSON API (Console.Routes, Console.Serve) and decides through
// the Office it gives whether a principal's role allows an action, which
// it records; the actions the pages share with the API are admin/api's.
package console

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/proxy"
)

//go:embed templates/*.html static/*
var files embed.FS

// Templates are the pages' templates, each by its file name (orders.html).
var Templates = template.Must(template.ParseFS(files, "templates/*.html"))

// Static serves the static files by name (console.css), to be mounted
// under a prefix stripped from the path.
func Static() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // static is embedded above: a build without it does not compile
	}
	return http.FileServerFS(static)
}

// Config is what the console's pages read and act through. A page whose
// dependency is nil says so or leaves its actions out.
type Config struct {
	// API are the JSON API's handlers, whose actions the pages share
	// (rotating a secret, replaying failed deliveries, an export).
	API    *api.Handlers
	Stores api.Stores
	Orders ordersync.MirrorReader
	// DeadLetters, Replayer and Follower serve the Dead letters pages
	// and an order's resync.
	DeadLetters ordersync.DeadLetters
	Follower    ordersync.Follower
	Replayer    ordersync.Replayer
	// ReplayJobs keeps the replay jobs (every letter a filter matches, in
	// the background); without it letters are replayed one at a time only.
	ReplayJobs ordersync.ReplayJobs
	// OrderCodes names, on the Dead letters pages, the orders of letters
	// that carry only an order id, when the mirror knows them; nil shows
	// the ids.
	OrderCodes          ordersync.OrderCodesResolver
	Endpoints           ordersync.Endpoints
	DeliveryDeadLetters ordersync.DeliveryDeadLetters
	Deliverer           ordersync.Deliverer
	Audit               ordersync.AuditLog
	// AuditActions are the names of the actions the trail records, for
	// the Audit page's filter.
	AuditActions []string
	// Sessions keeps the sessions; nobody signs in without it.
	Sessions ordersync.ConsoleSessions
	// SessionTTL is how long a session lasts; default DefaultSessionTTL.
	SessionTTL time.Duration
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (for the sign-in limiter) and whose X-Forwarded-Proto: https makes
	// the cookies Secure.
	TrustedProxies proxy.Trusted
	// Logger and Clock default to none and time.Now.
	Logger  *slog.Logger
	Clock   func() time.Time
	Exports ordersync.OrderExporter
	Reports ordersync.Reports
	// Overview serves the home; without it the home only links to the
	// pages.
	Overview ordersync.OverviewReader
	// OverviewRefresh is how often the Overview's script reads the figures
	// again; default DefaultOverviewRefresh.
	OverviewRefresh time.Duration
}

// Office is what the console needs of the server that routes it, which
// guards the listener, knows the tokens, and holds every request to its
// principal's role and the audit trail.
type Office interface {
	api.Office
	// Tokens are the admin tokens in force; without any, the console
	// needs no session (loopback).
	Tokens() []ordersync.AdminToken
	// TokenOf is the token in force equal to token, or false.
	TokenOf(token string) (ordersync.AdminToken, bool)
	// Principal is who r acts as, once the office has decided it.
	Principal(r *http.Request) (ordersync.Principal, bool)
	// SetPrincipal makes p who r acts as from now on (a sign-in).
	SetPrincipal(r *http.Request, p ordersync.Principal)
	// ServeAs serves r through the routes as p, come by via, as p's role
	// allows, recording an action.
	ServeAs(w http.ResponseWriter, r *http.Request, p ordersync.Principal, via ordersync.Via)
}

// Mux is where the console's pages are routed.
type Mux interface {
	api.Mux
	Handle(pattern string, h http.Handler)
}

// Console is the console's pages and sessions.
type Console struct {
	cfg     Config
	office  Office
	limiter *signInLimiter
	// jobs are the replay jobs this process runs.
	jobs *replayJobs
}

// New returns the console over cfg, served by office.
func New(cfg Config, office Office) *Console {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.OverviewRefresh <= 0 {
		cfg.OverviewRefresh = DefaultOverviewRefresh
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Console{cfg: cfg, office: office, limiter: newSignInLimiter(), jobs: newReplayJobs()}
}
