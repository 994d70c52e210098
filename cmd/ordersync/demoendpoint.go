package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/delivery"
)

// demoEndpointSecret signs the demo's deliveries (the Standard Webhooks
// specification's example secret).
const demoEndpointSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// demoEndpoint is the demo's fulfilment system: an HTTP endpoint in the
// demo's process that verifies each delivery as a merchant's would
// (delivery.Verify), deduplicates by webhook-id, and checks that each
// order's status changes arrive in order (each one's from is the last
// one's to).
type demoEndpoint struct {
	srv *http.Server
	ln  net.Listener

	mu         sync.Mutex
	seen       map[string]int              // deliveries per webhook-id
	paid       map[string]int              // distinct order.paid webhook-ids per order
	last       map[string]ordersync.Status // the last status change's to, per order
	changes    int                         // distinct status changes
	badSig     int                         // deliveries whose signature did not verify
	outOfOrder int                         // status changes whose from was not the last to
}

func startDemoEndpoint() (*demoEndpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &demoEndpoint{ln: ln, seen: map[string]int{}, paid: map[string]int{}, last: map[string]ordersync.Status{}}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.receive), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

func (e *demoEndpoint) URL() string { return "http://" + e.ln.Addr().String() + "/" }

// register adds the endpoint to the running pipeline through its admin API,
// for both events.
func (e *demoEndpoint) register(ctx context.Context, adminURL string) error {
	c := &admin.Client{BaseURL: adminURL}
	return c.Do(ctx, http.MethodPost, "/v1/endpoints", admin.EndpointParamsJSON{
		URL: e.URL(), Secret: demoEndpointSecret, Description: "the demo's fulfilment",
		Events: []string{string(ordersync.HookOrderPaid), string(ordersync.HookOrderStatusChanged)},
	}, nil)
}

func (e *demoEndpoint) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := delivery.Verify(demoEndpointSecret, r.Header, body, 5*time.Minute); err != nil {
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
	switch ordersync.HookEvent(ev.Type) {
	case ordersync.HookOrderPaid:
		e.paid[code]++
	case ordersync.HookOrderStatusChanged:
		e.changes++
		last, known := e.last[code]
		if (known && (change.From == nil || *change.From != last)) || (!known && change.From != nil) {
			e.outOfOrder++
		}
		e.last[code] = change.To
	}
	w.WriteHeader(http.StatusNoContent)
}

// demoDeliveries is what the endpoint received, against what it should
// have: an order.paid for each PAID trigger, and each order's last status.
type demoDeliveries struct {
	Paid, PaidWanted, Missing, Duplicates, BadSignatures, Changes, OutOfOrder int
}

// wait waits until every order with a PAID trigger has its order.paid and
// every order's last status change is the mirror's status, or ctx ends, and
// reports what arrived.
func (e *demoEndpoint) wait(ctx context.Context, triggers map[string]int, statuses map[string]ordersync.Status) demoDeliveries {
	for {
		d, complete := e.report(triggers, statuses)
		if complete || ctx.Err() != nil {
			return d
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *demoEndpoint) report(triggers map[string]int, statuses map[string]ordersync.Status) (demoDeliveries, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := demoDeliveries{BadSignatures: e.badSig, Changes: e.changes, OutOfOrder: e.outOfOrder}
	complete := true
	for code, n := range triggers {
		if n == 0 {
			continue
		}
		d.PaidWanted++
		if e.paid[code] > 0 {
			d.Paid++
		} else {
			d.Missing++
			complete = false
		}
	}
	for code, st := range statuses {
		if e.last[code] != st {
			complete = false
		}
	}
	for _, n := range e.seen {
		if n > 1 {
			d.Duplicates++
		}
	}
	return d, complete
}

func (e *demoEndpoint) Close() error {
	if err := e.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
