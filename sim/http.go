package sim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// Problem types of the service's problem bodies.
const (
	ProblemBadRequest      = "https://tools.ietf.org/html/rfc7231#section-6.5.1"
	ProblemUnauthorized    = "https://tools.ietf.org/html/rfc7235#section-3.1"
	ProblemNotFound        = "https://tools.ietf.org/html/rfc7231#section-6.5.4"
	ProblemConflict        = "https://tools.ietf.org/html/rfc7231#section-6.5.8"
	ProblemTooManyRequests = "https://tools.ietf.org/html/rfc6585#section-4"
	ProblemServerError     = "https://tools.ietf.org/html/rfc7231#section-6.6.1"
)

// Problem is an error body (RFC 7807 as the service writes it).
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Detail string              `json:"detail,omitempty"`
	Errors map[string][]string `json:"errors,omitempty"`
}

var problemTitles = map[ordersync.Language]map[int]string{
	ordersync.English: {
		http.StatusUnauthorized:        "Unauthorized: missing or invalid secret key.",
		http.StatusNotFound:            "The order was not found.",
		http.StatusConflict:            "The order's status does not allow this action.",
		http.StatusTooManyRequests:     "Too many requests.",
		http.StatusInternalServerError: "An error occurred while processing your request.",
	},
	ordersync.Spanish: {
		http.StatusUnauthorized:        "No autorizado: falta la llave secreta o no es válida.",
		http.StatusNotFound:            "La orden no existe.",
		http.StatusConflict:            "El estado de la orden no permite esta acción.",
		http.StatusTooManyRequests:     "Demasiadas solicitudes.",
		http.StatusInternalServerError: "Se produjo un error al procesar la solicitud.",
	},
}

var invalidJSONMessages = map[ordersync.Language]string{
	ordersync.English: "The request body is not valid JSON for this request.",
	ordersync.Spanish: "El cuerpo de la solicitud no es un JSON válido para esta solicitud.",
}

// problemBodies are the constant problem bodies, encoded once.
type problemBodies struct {
	lang         ordersync.Language
	unauthorized []byte
	notFound     []byte
	rateLimited  []byte
	serverError  []byte
}

func newProblemBodies(lang ordersync.Language) problemBodies {
	enc := func(typ string, status int) []byte {
		b, _ := json.Marshal(Problem{Type: typ, Title: problemTitles[lang][status], Status: status})
		return b
	}
	return problemBodies{
		lang:         lang,
		unauthorized: enc(ProblemUnauthorized, http.StatusUnauthorized),
		notFound:     enc(ProblemNotFound, http.StatusNotFound),
		rateLimited:  enc(ProblemTooManyRequests, http.StatusTooManyRequests),
		serverError:  enc(ProblemServerError, http.StatusInternalServerError),
	}
}

var (
	contentTypeJSON    = []string{"application/json; charset=utf-8"}
	contentTypeProblem = []string{"application/problem+json; charset=utf-8"}
)

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	w.Write(body)
}

func writeProblem(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = contentTypeProblem
	w.WriteHeader(status)
	w.Write(body)
}

func (s *Server) writeProblemOf(w http.ResponseWriter, p Problem) {
	b, err := json.Marshal(p)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
		return
	}
	writeProblem(w, p.Status, b)
}

// routes builds the handler. The payment link API requires the secret key;
// the control API under /_sim/ does not (it is the test's side door, never
// the merchant's).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /paymentlink/checkout", s.handleCheckout)
	mux.HandleFunc("GET /paymentlink/order/{orderCode}", s.handleGetOrder)
	mux.HandleFunc("POST /_sim/orders/{orderCode}/{action}", s.handleAction)
	mux.HandleFunc("GET /_sim/orders/{orderCode}", s.handleSimOrder)
	mux.HandleFunc("GET /_sim/orders", s.handleSimOrders)
	mux.HandleFunc("POST /_sim/expire", s.handleExpire)
	mux.HandleFunc("GET /_sim/stats", s.handleStats)
	mux.HandleFunc("GET /_sim/faults", s.handleGetFaults)
	mux.HandleFunc("PUT /_sim/faults", s.handlePutFaults)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, s.problems.notFound)
	})
	return mux
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	got := r.Header.Get("Authorization")
	if len(got) == len(s.authHeader) && subtle.ConstantTimeCompare([]byte(got), []byte(s.authHeader)) == 1 {
		return true
	}
	s.counters.unauthorized.Add(1)
	writeProblem(w, http.StatusUnauthorized, s.problems.unauthorized)
	return false
}

// injectFaults answers an API call with an injected fault and reports true,
// or reports false to let the call proceed.
func (s *Server) injectFaults(w http.ResponseWriter, r *http.Request, get bool) bool {
	f := s.faults.Load()
	if s.dice.chance(streamHang, f.HangRate) {
		s.counters.fault(streamHang)
		if !s.wait(r.Context(), f.HangDuration) {
			writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
			return true
		}
	}
	if s.dice.chance(streamRateLimit, f.RateLimitRate) {
		s.counters.fault(streamRateLimit)
		secs := max(1, int((f.RetryAfter+time.Second-1)/time.Second))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeProblem(w, http.StatusTooManyRequests, s.problems.rateLimited)
		return true
	}
	if s.dice.chance(streamServerError, f.ServerErrorRate) {
		s.counters.fault(streamServerError)
		writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
		return true
	}
	if get && f.GetLatency > 0 {
		s.counters.fault(streamGetLatency)
		if !s.wait(r.Context(), f.GetLatency) {
			writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
			return true
		}
	}
	return false
}

// wait sleeps for d and reports whether it slept through, false when the
// client went away or the simulator is closing.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

const maxCheckoutBody = 1 << 20

func (s *Server) handleCheckout(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) || s.injectFaults(w, r, false) {
		return
	}
	var params ordersync.PaymentLinkParams
	if err := decodeStrictJSON(http.MaxBytesReader(w, r.Body, maxCheckoutBody), &params); err != nil {
		s.counters.checkoutsRejected.Add(1)
		s.writeProblemOf(w, Problem{
			Type:   ProblemBadRequest,
			Title:  validationTitles[s.cfg.Language],
			Status: http.StatusBadRequest,
			Errors: map[string][]string{"$": {invalidJSONMessages[s.cfg.Language]}},
		})
		return
	}
	res, err := s.CreatePaymentLink(params)
	var verr *ordersync.ValidationError
	switch {
	case errors.As(err, &verr):
		s.writeProblemOf(w, Problem{Type: ProblemBadRequest, Title: verr.Title, Status: http.StatusBadRequest, Errors: verr.Fields})
		return
	case err != nil:
		s.log.Error("create payment link", "err", err)
		writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
		return
	}
	body, err := json.Marshal(res)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// decodeStrictJSON decodes exactly one JSON value from r.
func decodeStrictJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func (s *Server) handleGetOrder(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.counters.gets.Add(1)
	code := r.PathValue("orderCode")
	s.mu.RLock()
	o := s.orders[code]
	s.mu.RUnlock()
	if o != nil {
		o.gets.Add(1)
	}
	if s.injectFaults(w, r, true) {
		return
	}
	if o == nil {
		writeProblem(w, http.StatusNotFound, s.problems.notFound)
		return
	}
	_, doc := s.lookup(code)
	writeJSON(w, http.StatusOK, doc)
}

func (s *Server) handleAction(w http.ResponseWriter, r *http.Request) {
	action := Action(r.PathValue("action"))
	if _, ok := transitions[action]; !ok || action == ActionExpire {
		writeProblem(w, http.StatusNotFound, s.problems.notFound)
		return
	}
	var buyer *ordersync.Buyer
	if action == ActionPay {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxCheckoutBody))
		if strings.TrimSpace(string(body)) != "" || err != nil {
			buyer = new(ordersync.Buyer)
			if err == nil {
				err = json.Unmarshal(body, buyer)
			}
			if err != nil {
				s.writeProblemOf(w, Problem{
					Type: ProblemBadRequest, Title: validationTitles[s.cfg.Language], Status: http.StatusBadRequest,
					Errors: map[string][]string{"$": {invalidJSONMessages[s.cfg.Language]}},
				})
				return
			}
		}
	}
	_, err := s.Apply(r.PathValue("orderCode"), action, buyer)
	var terr *TransitionError
	switch {
	case errors.Is(err, ordersync.ErrNotFound):
		writeProblem(w, http.StatusNotFound, s.problems.notFound)
		return
	case errors.As(err, &terr):
		s.writeProblemOf(w, Problem{
			Type: ProblemConflict, Title: problemTitles[s.cfg.Language][http.StatusConflict],
			Status: http.StatusConflict, Detail: terr.Error(),
		})
		return
	case err != nil:
		writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
		return
	}
	_, doc := s.lookup(r.PathValue("orderCode"))
	writeJSON(w, http.StatusOK, doc)
}

func (s *Server) handleSimOrder(w http.ResponseWriter, r *http.Request) {
	o, doc := s.lookup(r.PathValue("orderCode"))
	if o == nil {
		writeProblem(w, http.StatusNotFound, s.problems.notFound)
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// handleSimOrders writes every order's detail, in creation order, as one
// JSON array built from the cached documents.
func (s *Server) handleSimOrders(w http.ResponseWriter, r *http.Request) {
	s.ExpireDue()
	s.mu.RLock()
	docs := make([][]byte, len(s.list))
	for i, o := range s.list {
		docs[i] = o.doc
	}
	s.mu.RUnlock()
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(http.StatusOK)
	w.Write([]byte{'['})
	for i, doc := range docs {
		if i > 0 {
			w.Write([]byte{','})
		}
		w.Write(doc)
	}
	w.Write([]byte{']'})
}

func (s *Server) handleExpire(w http.ResponseWriter, r *http.Request) {
	body, _ := json.Marshal(map[string]int{"expired": s.ExpireDue()})
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(s.Stats())
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, s.problems.serverError)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleGetFaults(w http.ResponseWriter, r *http.Request) {
	body, _ := json.Marshal(s.Faults())
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handlePutFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	err := decodeStrictJSON(io.LimitReader(r.Body, maxCheckoutBody), &f)
	if err == nil {
		err = s.SetFaults(f)
	}
	if err != nil {
		s.writeProblemOf(w, Problem{
			Type: ProblemBadRequest, Title: validationTitles[s.cfg.Language], Status: http.StatusBadRequest,
			Detail: err.Error(),
		})
		return
	}
	s.handleGetFaults(w, r)
}
