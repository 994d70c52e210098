// Package admin is ordersync's back-office HTTP API: read the mirror, create
// payment links and track orders so the mirror knows every order, act on dead
// letters, and the operational endpoints (/metrics, /healthz, /readyz).
//
// It listens on its own address, loopback by default, apart from the public
// webhook receiver.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/proxy"
	"github.com/ordersync/ordersync/internal/quietlog"
	collect "github.com/ordersync/ordersync/metrics"
)

// Config configures the API. Orders is required; an endpoint whose
// dependency is nil answers 501.
type Config struct {
	// Account is the account served when a request names none.
	Account string
	// Stores are the accounts the deployment serves, each a store of the
	// back office, the default first: what a request's account parameter
	// may name (ChooseStore). Default: Account alone.
	Stores      []string
	Orders      ordersync.MirrorReader
	DeadLetters ordersync.DeadLetters
	Follower    ordersync.Follower
	Replayer    ordersync.Replayer
	// ReplayJobs keeps the console's replay jobs (every letter a filter
	// matches, in the background); without it the console replays letters
	// one at a time only.
	ReplayJobs ordersync.ReplayJobs
	// OrderCodes names, on the Dead letters pages, the orders of letters
	// that carry only an order id, when the mirror knows them; nil shows
	// the ids.
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
	// DefaultSessionTTL.
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
	// at once (default 2).
	Exports ordersync.OrderExporter
	// Reports serves /v1/reports/….
	Reports ordersync.Reports
	// Overview serves the console's home; without it the home only
	// links to the pages.
	Overview ordersync.OverviewReader
	// OverviewRefresh is how often the Overview's script reads the figures
	// again; default DefaultOverviewRefresh.
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
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxExports <= 0 {
		cfg.MaxExports = defaultMaxExports
	}
	if cfg.OverviewRefresh <= 0 {
		cfg.OverviewRefresh = DefaultOverviewRefresh
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

// Server is the admin API handler.
type Server struct {
	cfg     Config
	mux     *router
	limiter *signInLimiter
	// tokenSet holds cfg.Tokens until SetTokens replaces them; read it
	// through Server.tokens.
	tokenSet atomic.Pointer[[]ordersync.AdminToken]
	// exportSlots holds a token per running export.
	exportSlots chan struct{}
	// jobs are the console's replay jobs.
	jobs *replayJobs
	// quiet logs failures that repeat per request (a failed audit write,
	// a store that does not answer) once, then summed up per interval.
	quiet *quietlog.Log
	// auditFailures counts the audit records that could not be written.
	auditFailures prometheus.Counter
}

// New returns the API handler.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: newRouter(), limiter: newSignInLimiter(), quiet: quietlog.New(cfg.Logger, quietlog.DefaultInterval),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersync_admin_audit_failures_total",
			Help: "Audit records of admin actions that could not be written (the actions happened).",
		})}
	if err := collect.RegisterAll(cfg.Registerer, collect.Of(&s.auditFailures)); err != nil {
		return nil, fmt.Errorf("admin: register metrics: %w", err)
	}
	s.tokenSet.Store(&cfg.Tokens)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", cfg.Metrics)
	}
	s.mux.HandleFunc("GET /v1/orders", s.listOrders)
	s.mux.HandleFunc("GET /v1/orders/{orderCode}", s.showOrder)
	s.mux.HandleFunc("GET /v1/orders/{orderCode}/events", s.orderEvents)
	s.mux.HandleFunc("GET /v1/events", s.listEvents)
	s.mux.HandleFunc("GET /v1/reports/daily", when(cfg.Reports != nil, "reports", s.dailyTotals))
	s.mux.HandleFunc("POST /v1/orders/track", when(cfg.Follower != nil, "tracking", s.trackOrder))
	s.mux.HandleFunc("POST /v1/payment-links", when(cfg.Follower != nil, "link creation", s.createPaymentLink))
	s.mux.HandleFunc("GET /v1/dead-letters", when(cfg.DeadLetters != nil, "dead letters", s.listDeadLetters))
	s.mux.HandleFunc("GET /v1/dead-letters/{id}", when(cfg.DeadLetters != nil, "dead letters", s.showDeadLetter))
	s.mux.HandleFunc("POST /v1/dead-letters/{id}/replay", when(cfg.Replayer != nil, "replay", s.replayDeadLetter))
	s.mux.HandleFunc("POST /v1/dead-letters/replay", when(cfg.Replayer != nil, "replay", s.replayDeadLetters))
	s.routeEndpoints()
	s.mux.HandleFunc("GET /v1/audit", when(cfg.Audit != nil, "the audit trail", s.listAudit))
	s.routeConsole()
	s.routeExports()
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
	case isConsolePath(r.URL.Path):
		s.serveConsole(w, r)
	case len(s.tokens()) == 0:
		s.serveAs(w, r, ordersync.Loopback, ordersync.ViaAPI)
	case isDownload(r) && r.Header.Get("Authorization") == "":
		s.serveDownload(w, r)
	default:
		t, ok := s.bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ordersync"`)
			writeProblem(w, http.StatusUnauthorized, "a valid bearer token is required", nil)
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

func (s *Server) account(r *http.Request) string {
	if a := r.URL.Query().Get("account"); a != "" {
		return a
	}
	return s.cfg.Account
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			// Not an error of the request: any reason not to be ready is a
			// 503 naming it, which is what a load balancer reads.
			writeProblem(w, http.StatusServiceUnavailable, "not ready: "+err.Error(), nil)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// OrderList is the body of GET /v1/orders.
type OrderList struct {
	Orders []*ordersync.MirroredOrder `json:"orders"`
	// Count is how many orders this page holds. NextCursor, null on the
	// last page, asks for the next one (cursor=). Total, how many the
	// filter selects in all, is there when asked for (count=exact).
	Count      int     `json:"count"`
	NextCursor *string `json:"nextCursor"`
	Total      *int    `json:"total,omitempty"`
	Offset     int     `json:"offset"`
	Limit      int     `json:"limit"`
	// AsOf and Behind, for a search (q=), say how current its match by the
	// buyer's name is (ordersync.OrderPage).
	AsOf   *time.Time `json:"asOf,omitempty"`
	Behind bool       `json:"behind,omitempty"`
}

// NewOrderList is the answer for one page of a listing: never a null list.
func NewOrderList(page ordersync.OrderPage) OrderList {
	orders := page.Orders
	if orders == nil {
		orders = []*ordersync.MirroredOrder{}
	}
	var next *string
	if page.Next != nil {
		s := page.Next.String()
		next = &s
	}
	l := OrderList{Orders: orders, Count: len(orders), NextCursor: next, Total: page.Total, Offset: page.Offset, Limit: page.Limit, Behind: page.Behind}
	if !page.AsOf.IsZero() {
		l.AsOf = &page.AsOf
	}
	return l
}

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) {
	filter, err := parseOrderQuery(r.URL.Query(), time.Now())
	if err != nil {
		s.fail(w, "list orders", err, "")
		return
	}
	choice, err := s.chooseStore(r, true)
	if err != nil {
		s.fail(w, "list orders", err, "")
		return
	}
	filter.Account = choice.Account
	page, err := s.cfg.Orders.ListOrders(r.Context(), filter)
	if err != nil {
		s.fail(w, "list orders", err, "")
		return
	}
	writeJSON(w, http.StatusOK, NewOrderList(page))
}

// queryCount reads the query parameter name, when given, into dst as a
// whole number ≥ 0; otherwise it answers 400 naming the parameter and
// returns false.
func queryCount(w http.ResponseWriter, q url.Values, name string, dst *int) bool {
	v := q.Get(name)
	if v == "" {
		return true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		writeProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{name: {"must be a whole number ≥ 0"}})
		return false
	}
	*dst = n
	return true
}

func (s *Server) showOrder(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("orderCode")
	choice, err := s.chooseStore(r, false)
	if err != nil {
		s.fail(w, "find order", err, "")
		return
	}
	o, err := s.cfg.Orders.FindOrderByCode(r.Context(), choice.Account, code)
	if err != nil {
		s.fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// Kinds of event log entries.
const (
	EventKindWebhook  = "webhook"
	EventKindDelivery = "delivery"
)

// EventJSON is one entry of the event log as the API writes it: a webhook
// heard (kind "webhook": msgId, receivedAt, signature, …) or how the
// delivery of an order event to an HTTP endpoint ended (kind "delivery":
// endpointId, webhookId, attempts, the last HTTP status). At is when it
// happened, a webhook's receivedAt or a delivery's end: the log is newest
// first by it. Type is the webhook's type or the delivered event's.
type EventJSON struct {
	Kind           string       `json:"kind"`
	At             time.Time    `json:"at"`
	MsgID          string       `json:"msgId,omitempty"`
	ReceivedAt     time.Time    `json:"receivedAt,omitzero"`
	Type           string       `json:"type"`
	OrderType      string       `json:"orderType,omitempty"`
	OrderID        ordersync.ID `json:"orderId,omitempty"` // a number when all digits, as in the order
	OrderReference string       `json:"orderReference,omitempty"`
	OrderCode      string       `json:"orderCode,omitempty"`
	// OrderStatus is the status of the order a delivery carried.
	OrderStatus ordersync.Status `json:"orderStatus,omitempty"`
	Signature   string           `json:"signature,omitempty"`
	EndpointID  string           `json:"endpointId,omitempty"`
	WebhookID   string           `json:"webhookId,omitempty"`
	Attempts    int              `json:"attempts,omitempty"`
	Status      int              `json:"status,omitempty"`
	Outcome     string           `json:"outcome"`
	Detail      string           `json:"detail,omitempty"`
}

func (s *Server) orderEvents(w http.ResponseWriter, r *http.Request) {
	account, code := s.account(r), r.PathValue("orderCode")
	o, err := s.cfg.Orders.FindOrderByCode(r.Context(), account, code)
	if err != nil {
		s.fail(w, "find order", err, fmt.Sprintf("order %s is not in the mirror", code))
		return
	}
	const limit = maxEventLimit
	events, err := s.cfg.Orders.ListEvents(r.Context(), ordersync.EventFilter{Account: account, OrderCode: code, OrderID: o.Order.OrderID, Limit: limit})
	if err != nil {
		s.fail(w, "list events", err, "")
		return
	}
	deliveries, err := s.cfg.Orders.ListDeliveries(r.Context(), ordersync.DeliveryFilter{Account: account, OrderCode: code, Limit: limit})
	if err != nil {
		s.fail(w, "list deliveries", err, "")
		return
	}
	writeJSON(w, http.StatusOK, NewEventList(events, deliveries, limit))
}

// EventList is the answer of the event log endpoints.
type EventList struct {
	Events []EventJSON `json:"events"`
}

// NewEventList is the event log as the API answers it: webhooks heard and
// deliveries ended, merged newest first, at most limit of them (0: all);
// never nil.
func NewEventList(events []ordersync.EventRecord, deliveries []ordersync.DeliveryRecord, limit int) EventList {
	out := make([]EventJSON, 0, len(events)+len(deliveries))
	for _, e := range events {
		out = append(out, EventJSON{Kind: EventKindWebhook, At: e.ReceivedAt, MsgID: e.MsgID, ReceivedAt: e.ReceivedAt, Type: string(e.Type),
			OrderType: e.OrderType, OrderID: e.OrderID, OrderReference: e.OrderReference, OrderCode: e.OrderCode,
			Signature: string(e.Signature), Outcome: string(e.Outcome), Detail: e.Detail})
	}
	for _, d := range deliveries {
		out = append(out, EventJSON{Kind: EventKindDelivery, At: d.At, Type: string(d.Event), OrderCode: d.OrderCode,
			OrderStatus: d.OrderStatus, EndpointID: d.EndpointID, WebhookID: d.WebhookID, Attempts: d.Attempts, Status: d.Status,
			Outcome: string(d.Outcome), Detail: d.Detail})
	}
	// Each list comes newest first; a stable sort keeps their own order
	// among entries of the same instant.
	slices.SortStableFunc(out, func(a, b EventJSON) int { return b.At.Compare(a.At) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return EventList{Events: out}
}

// listEvents answers "did we hear about this order?" whether or not the
// order is in the mirror: the event log's rows for an orderCode or an
// orderId (both: rows with both), or the latest of all, newest first. Asked
// about an orderCode, it shows the order's deliveries too.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	filter := ordersync.EventFilter{Account: s.account(r), OrderCode: strings.TrimSpace(q.Get("orderCode")),
		OrderID: ordersync.ID(strings.TrimSpace(q.Get("orderId"))), MsgID: strings.TrimSpace(q.Get("msgId"))}
	if !queryCount(w, q, "limit", &filter.Limit) {
		return
	}
	if filter.Limit == 0 {
		filter.Limit = defaultEventLimit
	}
	filter.Limit = min(filter.Limit, maxEventLimit)
	events, err := s.cfg.Orders.ListEvents(r.Context(), filter)
	if err != nil {
		s.fail(w, "list events", err, "")
		return
	}
	var deliveries []ordersync.DeliveryRecord
	if filter.OrderCode != "" {
		if deliveries, err = s.cfg.Orders.ListDeliveries(r.Context(), ordersync.DeliveryFilter{Account: filter.Account, OrderCode: filter.OrderCode, Limit: filter.Limit}); err != nil {
			s.fail(w, "list deliveries", err, "")
			return
		}
	}
	writeJSON(w, http.StatusOK, NewEventList(events, deliveries, filter.Limit))
}

// The event log's page: 100 entries unless asked, 1,000 at most.
const (
	defaultEventLimit = 100
	maxEventLimit     = 1000
)

// TrackRequest is the body of POST /v1/orders/track.
type TrackRequest struct {
	OrderCode string `json:"orderCode"`
}

func (s *Server) trackOrder(w http.ResponseWriter, r *http.Request) {
	var req TrackRequest
	if !decodeBody(w, r, &req) {
		return
	}
	req.OrderCode = strings.TrimSpace(req.OrderCode)
	if req.OrderCode == "" {
		writeProblem(w, http.StatusBadRequest, "invalid request", map[string][]string{"orderCode": {"The field is required."}})
		return
	}
	noteObject(r, "order "+req.OrderCode)
	o, err := s.cfg.Follower.TrackOrder(r.Context(), s.account(r), req.OrderCode)
	if err != nil {
		s.fail(w, "track order", err, "")
		return
	}
	writeJSON(w, http.StatusOK, o)
}

func (s *Server) createPaymentLink(w http.ResponseWriter, r *http.Request) {
	var params ordersync.PaymentLinkParams
	if !decodeBody(w, r, &params) {
		return
	}
	res, err := s.cfg.Follower.CreatePaymentLink(r.Context(), s.account(r), params)
	if err != nil {
		s.fail(w, "create payment link", err, "")
		return
	}
	noteObject(r, "order "+res.OrderCode)
	writeJSON(w, http.StatusOK, res)
}

// DeadLetterJSON is a dead letter as the API writes it.
type DeadLetterJSON struct {
	ID             int64             `json:"id"`
	MsgID          string            `json:"msgId"`
	Account        string            `json:"account"`
	Reason         string            `json:"reason"`
	Attempts       int               `json:"attempts"`
	LastError      string            `json:"lastError"`
	OrderID        ordersync.ID      `json:"orderId,omitempty"` // a number when all digits, as in the order
	OrderReference string            `json:"orderReference,omitempty"`
	OrderCode      string            `json:"orderCode,omitempty"`
	Body           json.RawMessage   `json:"body,omitempty"`
	BodyText       string            `json:"bodyText,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
	ReplayedAt     *time.Time        `json:"replayedAt,omitempty"`
	ReplayCount    int               `json:"replayCount"`
}

// DeadLetterJSONOf converts a dead letter; a body that is not JSON is given
// as text.
func DeadLetterJSONOf(dl *ordersync.DeadLetter) DeadLetterJSON {
	out := DeadLetterJSON{ID: dl.ID, MsgID: dl.MsgID, Account: dl.Account, Reason: string(dl.Reason),
		Attempts: dl.Attempts, LastError: dl.LastError, OrderID: dl.OrderID, OrderReference: dl.OrderReference,
		OrderCode: dl.OrderCode, Headers: dl.Headers, CreatedAt: dl.CreatedAt, ReplayedAt: dl.ReplayedAt,
		ReplayCount: dl.ReplayCount}
	if json.Valid(dl.Body) {
		out.Body = dl.Body
	} else {
		out.BodyText = string(dl.Body)
	}
	return out
}

func (s *Server) deadLetterFilter(w http.ResponseWriter, r *http.Request) (ordersync.DeadLetterFilter, bool) {
	f, fields := ParseDeadLetterQuery(r.URL.Query())
	if fields != nil {
		writeProblem(w, http.StatusBadRequest, "invalid query", fields)
		return f, false
	}
	return f, true
}

// ParseDeadLetterQuery reads a dead-letter filter from a query (account,
// "" or AllStores for every account, also those the deployment no longer
// serves, whose letters are exactly what needs seeing; reason, replayed=true, limit, and before: the id the page starts
// below), as the API and the console take it; the fields it cannot read
// are named with why.
func ParseDeadLetterQuery(q url.Values) (ordersync.DeadLetterFilter, map[string][]string) {
	f := ordersync.DeadLetterFilter{Account: q.Get("account"), IncludeReplayed: q.Get("replayed") == "true"}
	if f.Account == AllStores {
		f.Account = ""
	}
	fields := map[string][]string{}
	if v := q.Get("reason"); v != "" {
		var err error
		if f.Reason, err = ordersync.ParseDeadLetterReason(v); err != nil {
			fields["reason"] = []string{err.Error()}
		}
	}
	for _, p := range []struct {
		name string
		set  func(int64)
	}{{"limit", func(n int64) { f.Limit = int(n) }}, {"before", func(n int64) { f.BeforeID = n }}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				fields[p.name] = []string{"must be a whole number ≥ 0"}
				continue
			}
			p.set(n)
		}
	}
	for _, p := range []struct {
		name string
		set  *time.Time
	}{{"requeued_from", &f.RequeuedFrom}, {"requeued_to", &f.RequeuedTo}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				fields[p.name] = []string{"must be an RFC 3339 time, as 2026-11-25T14:00:00Z"}
				continue
			}
			*p.set = t
		}
	}
	if !f.RequeuedTo.IsZero() && f.RequeuedFrom.IsZero() {
		fields["requeued_to"] = []string{"needs requeued_from"}
	}
	if len(fields) == 0 {
		return f, nil
	}
	return f, fields
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	f, ok := s.deadLetterFilter(w, r)
	if !ok {
		return
	}
	dls, err := s.cfg.DeadLetters.ListDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, "list dead letters", err, "")
		return
	}
	out := make([]DeadLetterJSON, 0, len(dls))
	for _, dl := range dls {
		out = append(out, DeadLetterJSONOf(dl))
	}
	writeJSON(w, http.StatusOK, map[string]any{"deadLetters": out, "count": len(out)})
}

func (s *Server) deadLetterID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeProblem(w, http.StatusBadRequest, "invalid dead letter id", map[string][]string{"id": {"must be a positive whole number"}})
		return 0, false
	}
	return id, true
}

// findDeadLetter reads the dead letter the path's id names, answering the
// request itself (400 or 404) when it cannot.
func (s *Server) findDeadLetter(w http.ResponseWriter, r *http.Request) (*ordersync.DeadLetter, bool) {
	id, ok := s.deadLetterID(w, r)
	if !ok {
		return nil, false
	}
	dl, err := s.cfg.DeadLetters.FindDeadLetter(r.Context(), id)
	if err != nil {
		s.fail(w, "find dead letter", err, fmt.Sprintf("no dead letter %d", id))
		return nil, false
	}
	return dl, true
}

func (s *Server) showDeadLetter(w http.ResponseWriter, r *http.Request) {
	dl, ok := s.findDeadLetter(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, DeadLetterJSONOf(dl))
}

func (s *Server) replayDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := s.deadLetterID(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Replayer.ReplayDeadLetter(r.Context(), id); err != nil {
		s.fail(w, "replay dead letter", err, fmt.Sprintf("no dead letter %d", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"replayed": 1})
}

func (s *Server) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	f, ok := s.deadLetterFilter(w, r)
	if !ok {
		return
	}
	noteObject(r, strings.TrimSpace("dead letters "+r.URL.RawQuery))
	n, err := s.cfg.Replayer.ReplayDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, "replay dead letters", err, "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"replayed": n})
}

// maxRequestBody bounds what the API reads from a client.
const maxRequestBody = 1 << 20

func decodeBody(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err := dec.Decode(dst); err != nil {
		writeProblem(w, http.StatusBadRequest, "the body is not valid JSON for this request: "+err.Error(), nil)
		return false
	}
	return true
}

// Problem is an RFC 7807 problem body, the same shape the payment link
// service answers with.
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Errors map[string][]string `json:"errors,omitempty"`
}

func writeProblem(w http.ResponseWriter, status int, title string, fields map[string][]string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Problem{Type: "about:blank", Title: title, Status: status, Errors: fields})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
