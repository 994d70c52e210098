package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/ordersync/ordersync"
)

// Deps are what the handlers read and act through; a handler whose
// dependency is nil answers 501 (When).
type Deps struct {
	// Stores are the stores served, what a request's account parameter
	// may name.
	Stores      Stores
	Orders      ordersync.MirrorReader
	Follower    ordersync.Follower
	DeadLetters ordersync.DeadLetters
	Replayer    ordersync.Replayer
	Audit       ordersync.AuditLog
	// Endpoints, DeliveryDeadLetters and Deliverer serve /v1/endpoints and
	// /v1/delivery-dead-letters; SecretGrace is how long a rotated
	// endpoint secret keeps signing.
	Endpoints           ordersync.Endpoints
	DeliveryDeadLetters ordersync.DeliveryDeadLetters
	Deliverer           ordersync.Deliverer
	SecretGrace         time.Duration
	// Reports serves /v1/reports/….
	Reports ordersync.Reports
	// Exports serves /v1/exports/…; ExportBatchSize is how many orders one
	// of its reads takes (default 1,000) and MaxExports how many exports run
	// at once (default DefaultMaxExports).
	Exports         ordersync.OrderExporter
	ExportBatchSize int
	MaxExports      int
	// Logger takes what a handler logs beside its answer; default none.
	Logger *slog.Logger
	// Clock is when a since or until given as a duration counts back
	// from; default time.Now.
	Clock func() time.Time
}

// Office is what the handlers need of the server that routes them, which
// has decided who asks and what their role allows before a handler runs.
type Office interface {
	// Note names the object of the request's action in its audit record
	// when the path does not.
	Note(r *http.Request, object string)
	// Fail answers the error of op (WriteError), logging one the table
	// does not know.
	Fail(w http.ResponseWriter, op string, err error, notFound string)
	// Record records an action of r in the audit trail, for a handler
	// whose read the trail must show (an export of buyers' data).
	Record(r *http.Request, action, object, outcome string)
	// Actor names who r acts as, for a handler's log.
	Actor(r *http.Request) string
}

// Mux is where the handlers are routed.
type Mux interface {
	HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request))
}

// Handlers are the JSON API's handlers, and the actions the console takes
// through them.
type Handlers struct {
	deps   Deps
	office Office
	// exportSlots holds a token per running export.
	exportSlots chan struct{}
}

// New returns the handlers over deps, served by office.
func New(deps Deps, office Office) *Handlers {
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.MaxExports <= 0 {
		deps.MaxExports = DefaultMaxExports
	}
	return &Handlers{deps: deps, office: office, exportSlots: make(chan struct{}, deps.MaxExports)}
}

// Routes adds the handlers' routes to mux.
func (h *Handlers) Routes(mux Mux) {
	mux.HandleFunc("GET /v1/orders", h.listOrders)
	mux.HandleFunc("GET /v1/orders/{orderCode}", h.showOrder)
	mux.HandleFunc("GET /v1/orders/{orderCode}/events", h.orderEvents)
	mux.HandleFunc("GET /v1/events", h.listEvents)
	mux.HandleFunc("POST /v1/orders/track", When(h.deps.Follower != nil, "tracking", h.trackOrder))
	mux.HandleFunc("POST /v1/payment-links", When(h.deps.Follower != nil, "link creation", h.createPaymentLink))
	mux.HandleFunc("GET /v1/dead-letters", When(h.deps.DeadLetters != nil, "dead letters", h.listDeadLetters))
	mux.HandleFunc("GET /v1/dead-letters/{id}", When(h.deps.DeadLetters != nil, "dead letters", h.showDeadLetter))
	mux.HandleFunc("POST /v1/dead-letters/{id}/replay", When(h.deps.Replayer != nil, "replay", h.replayDeadLetter))
	mux.HandleFunc("POST /v1/dead-letters/replay", When(h.deps.Replayer != nil, "replay", h.replayDeadLetters))
	mux.HandleFunc("GET /v1/audit", When(h.deps.Audit != nil, "the audit trail", h.listAudit))
	h.routeEndpoints(mux)
	mux.HandleFunc("GET /v1/reports/daily", When(h.deps.Reports != nil, "reports", h.dailyTotals))
	h.routeExports(mux)
}

// IsWrite reports whether a request of method may change something: every
// such request of the API or the console is an action, held to the role
// and recorded.
func IsWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
