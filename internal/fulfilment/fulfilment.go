// Package fulfilment is a merchant's fulfilment system in miniature: an
// HTTP endpoint that receives ordersync's deliveries, verifies each one as
// a merchant's receiver would (delivery.Verify), deduplicates by
// webhook-id, and checks that each order's events arrive in order. The
// demo registers one; the lab's chaos run registers one that also fails a
// share of the attempts on purpose.
package fulfilment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/delivery"
)

// Secret signs the deliveries to an Endpoint (the Standard Webhooks
// specification's example secret).
const Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Faults are the failures an endpoint answers with instead of taking a
// delivery, each a share of the attempts.
type Faults struct {
	// Error5xx answers 500.
	Error5xx float64
	// TooMany answers 429 with Retry-After: RetryAfter.
	TooMany    float64
	RetryAfter time.Duration
	// Hang holds the request open without answering until the sender gives
	// up (its timeout) or HangFor passes.
	Hang    float64
	HangFor time.Duration
	Seed    uint64
}

// Endpoint is one fulfilment endpoint on a loopback port.
type Endpoint struct {
	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	faults   Faults
	rng      *rand.Rand
	attempts int
	injected int
	seen     map[string]int    // deliveries per webhook-id
	paid     map[string]int    // distinct order.paid webhook-ids per order
	orders   map[string]*order // per order, what arrived
	changes  int               // distinct status changes
	badSig   int               // deliveries whose signature did not verify
	disorder int               // events that arrived before one that precedes them
	notes    []string          // the first disorders, described
}

// order is what an endpoint knows of one order.
type order struct {
	last      ordersync.Status // the last status change's to
	changes   int              // status changes received
	paidAfter int              // changes received when order.paid arrived; -1 before
	firstPaid int              // index of the first change to PAID or FINALIZED; -1 before
	trail     []string         // what arrived, in order, and when, for the notes
}

// disordered counts an event that arrived out of order and notes the first
// few, with what the order had received before.
func (e *Endpoint) disordered(code, what string, o *order) {
	e.disorder++
	if len(e.notes) < 10 {
		e.notes = append(e.notes, fmt.Sprintf("%s: %s after %s", code, what, strings.Join(o.trail, ", ")))
	}
}

// Start listens on a loopback port and serves until Close.
func Start(faults Faults) (*Endpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &Endpoint{ln: ln, faults: faults, rng: rand.New(rand.NewPCG(faults.Seed, faults.Seed^0x5eed)),
		seen: map[string]int{}, paid: map[string]int{}, orders: map[string]*order{}}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.receive), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// URL is where deliveries go.
func (e *Endpoint) URL() string { return "http://" + e.ln.Addr().String() + "/" }

// Register adds the endpoint to a running ordersync through its admin API,
// for both events.
func (e *Endpoint) Register(ctx context.Context, c *admin.Client, description string) error {
	return c.Do(ctx, http.MethodPost, "/v1/endpoints", api.EndpointParamsJSON{
		URL: e.URL(), Secret: Secret, Description: description,
		Events: []string{string(ordersync.HookOrderPaid), string(ordersync.HookOrderStatusChanged)},
	}, nil)
}

// StopFaults makes every later attempt succeed.
func (e *Endpoint) StopFaults() {
	e.mu.Lock()
	e.faults = Faults{}
	e.mu.Unlock()
}

func (e *Endpoint) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.attempts++
	f, x := e.faults, e.rng.Float64()
	fault := x < f.Error5xx+f.TooMany+f.Hang
	if fault {
		e.injected++
	}
	e.mu.Unlock()
	switch {
	case x < f.Error5xx:
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case x < f.Error5xx+f.TooMany:
		w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter/time.Second)))
		http.Error(w, "injected rate limit", http.StatusTooManyRequests)
		return
	case fault:
		select {
		case <-r.Context().Done():
		case <-time.After(f.HangFor):
		}
		http.Error(w, "injected hang", http.StatusServiceUnavailable)
		return
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if err := delivery.Verify(Secret, r.Header, body, 5*time.Minute); err != nil {
		e.badSig++
		http.Error(w, "signature", http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(delivery.HeaderID)
	if e.seen[id]++; e.seen[id] > 1 {
		w.WriteHeader(http.StatusNoContent) // a duplicate: acknowledged, not acted on
		return
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			OrderCode    string `json:"orderCode"`
			StatusChange struct {
				From *ordersync.Status `json:"from"`
				To   ordersync.Status  `json:"to"`
			} `json:"statusChange"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	code, change := ev.Data.OrderCode, ev.Data.StatusChange
	o := e.orders[code]
	if o == nil {
		o = &order{paidAfter: -1, firstPaid: -1}
		e.orders[code] = o
	}
	switch ordersync.HookEvent(ev.Type) {
	case ordersync.HookOrderPaid:
		e.paid[code]++
		// order.paid follows the status change that paid the order and
		// precedes the next one.
		if e.paid[code] == 1 && o.firstPaid >= 0 && o.changes != o.firstPaid+1 {
			e.disordered(code, arrived("order.paid"), o)
		}
		o.paidAfter = o.changes
		o.trail = append(o.trail, arrived("paid"))
	case ordersync.HookOrderStatusChanged:
		e.changes++
		what := arrived(fmt.Sprintf("%v→%s", fromText(change.From), change.To))
		if (o.changes > 0 && (change.From == nil || *change.From != o.last)) || (o.changes == 0 && change.From != nil) {
			e.disordered(code, what, o)
		}
		if o.firstPaid < 0 && (change.To == ordersync.StatusPaid || change.To == ordersync.StatusFinalized) {
			o.firstPaid = o.changes
			if o.paidAfter >= 0 { // order.paid came before the change that paid the order
				e.disordered(code, what, o)
			}
		}
		o.last = change.To
		o.trail = append(o.trail, what)
		o.changes++
	}
	w.WriteHeader(http.StatusNoContent)
}

// arrived is what arrived with its time: a note on events out of order
// then tells which process delivered each, against the pipeline's log.
func arrived(what string) string {
	return what + " at " + time.Now().UTC().Format("15:04:05.000")
}

func fromText(s *ordersync.Status) string {
	if s == nil {
		return "∅"
	}
	return string(*s)
}

// Report is what an endpoint received, against what it should have: an
// order.paid for each PAID trigger, and each order's last status.
type Report struct {
	Paid, PaidWanted, Missing int
	// PaidTwice counts orders that got order.paid under two webhook-ids: a
	// second trigger, which deduplication cannot catch.
	PaidTwice int
	// Duplicates counts webhook-ids delivered more than once (a receiver
	// dedupes them); Redelivered is how many extra deliveries that was.
	Duplicates, Redelivered int
	BadSignatures, Changes  int
	// OutOfOrder counts events that arrived before one that precedes them
	// in their order's life.
	OutOfOrder int
	// Attempts is every request; Injected those answered with a fault.
	Attempts, Injected int
	// Notes describe the first events out of order and orders whose last
	// status change is not the expected status.
	Notes []string
}

// Wait waits until every order with a PAID trigger has its order.paid and
// every order's last status change is the mirror's status, or ctx ends, and
// reports what arrived and whether it was complete.
func (e *Endpoint) Wait(ctx context.Context, triggers map[string]int, statuses map[string]ordersync.Status) (Report, bool) {
	for {
		r, complete := e.Report(triggers, statuses)
		if complete || ctx.Err() != nil {
			return r, complete
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Report compares what arrived with the PAID triggers per order and the
// mirror's statuses; complete says nothing is missing.
func (e *Endpoint) Report(triggers map[string]int, statuses map[string]ordersync.Status) (r Report, complete bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r = Report{BadSignatures: e.badSig, Changes: e.changes, OutOfOrder: e.disorder, Attempts: e.attempts, Injected: e.injected,
		Notes: slices.Clone(e.notes)}
	complete = true
	for code, n := range triggers {
		if n == 0 {
			continue
		}
		r.PaidWanted++
		if e.paid[code] > 0 {
			r.Paid++
		} else {
			r.Missing++
			complete = false
		}
	}
	for _, n := range e.paid {
		if n > 1 {
			r.PaidTwice++
		}
	}
	for code, st := range statuses {
		if o := e.orders[code]; o == nil || o.last != st {
			if complete && o != nil {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: is %s, received %s", code, st, strings.Join(o.trail, ", ")))
			} else if complete {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: is %s, received nothing", code, st))
			}
			complete = false
		}
	}
	for _, n := range e.seen {
		if n > 1 {
			r.Duplicates++
			r.Redelivered += n - 1
		}
	}
	return r, complete
}

// Close stops serving.
func (e *Endpoint) Close() error {
	if err := e.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
