package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
)

// call serves one request with a JSON body through the handlers over deps
// and the office, and reads a problem when it is one.
func call(t *testing.T, deps Deps, office *testOffice, method, target, body string) (*httptest.ResponseRecorder, Problem) {
	t.Helper()
	mux := http.NewServeMux()
	deps.Stores = Stores{Default: "acme"}
	deps.Logger = slog.New(slog.DiscardHandler)
	deps.Clock = time.Now
	New(deps, office).Routes(mux)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	var p Problem
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatalf("%s %s: %d, not a problem: %s", method, target, w.Code, w.Body)
		}
	}
	return w, p
}

// TestEndpointHandlersAnswer: an endpoint is created with its secret shown
// once and its id noted for the audit trail, listed without the secret,
// an unknown one is a 404 naming it, a bad limit a 400 naming it, and
// what needs the deliveries (the worker role) is a 501 without them.
func TestEndpointHandlersAnswer(t *testing.T) {
	db := fake.NewStore()
	deps := Deps{Orders: db, Endpoints: db, DeliveryDeadLetters: db}
	office := &testOffice{}
	w, _ := call(t, deps, office, "POST", "/v1/endpoints", `{"url":"https://shop.example/hook","events":["order.paid"]}`)
	var ep EndpointJSON
	if err := json.Unmarshal(w.Body.Bytes(), &ep); w.Code != http.StatusCreated || err != nil || ep.Secret == "" ||
		w.Header().Get("Location") != "/v1/endpoints/"+ep.ID {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if len(office.notes) != 1 || office.notes[0] != "endpoint "+ep.ID {
		t.Errorf("create noted %q, want the endpoint", office.notes)
	}
	if w, _ := call(t, deps, office, "GET", "/v1/endpoints", ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"count":1`) ||
		strings.Contains(w.Body.String(), ep.Secret) {
		t.Errorf("list: %d %s", w.Code, w.Body)
	}
	if w, p := call(t, deps, office, "GET", "/v1/endpoints/nope", ""); w.Code != http.StatusNotFound || p.Title != "no endpoint nope" {
		t.Errorf("an unknown endpoint: %d %q", w.Code, p.Title)
	}
	if w, _ := call(t, deps, office, "GET", "/v1/endpoints/"+ep.ID+"/failed-deliveries", ""); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), `"total":0`) {
		t.Errorf("failed deliveries: %d %s", w.Code, w.Body)
	}
	if w, p := call(t, deps, office, "GET", "/v1/delivery-dead-letters?limit=0", ""); w.Code != http.StatusBadRequest || len(p.Errors["limit"]) != 1 {
		t.Errorf("a bad limit: %d %+v", w.Code, p)
	}
	for _, path := range []string{"/test", "/replay", "/failed-deliveries/replay"} {
		if w, _ := call(t, deps, office, "POST", "/v1/endpoints/"+ep.ID+path, `{}`); w.Code != http.StatusNotImplemented {
			t.Errorf("%s without deliveries: %d, want 501", path, w.Code)
		}
	}
	if w, _ := call(t, deps, office, "DELETE", "/v1/endpoints/"+ep.ID, ""); w.Code != http.StatusNoContent {
		t.Errorf("delete: %d %s", w.Code, w.Body)
	}
}

// noReports and noExports hold no orders.
type noReports struct{}

func (noReports) DailyTotals(context.Context, ordersync.DailyTotalsParams) (ordersync.DailyTotals, error) {
	return ordersync.DailyTotals{TZ: "UTC"}, nil
}

type noExports struct{}

func (noExports) ExportOrders(context.Context, ordersync.ExportParams, func([]ordersync.ExportedOrder) error) error {
	return nil
}

func (noExports) StoreTimeZone(context.Context, string) (string, error) { return "", nil }

// TestReportAndExportHandlersAnswer: a report without its range is a 400
// naming each missing bound; an export's bad filter and bad format are
// named in one answer, and the refusal is recorded in the audit trail,
// as is a finished export with its filter.
func TestReportAndExportHandlersAnswer(t *testing.T) {
	deps := Deps{Orders: fake.NewStore(), Reports: noReports{}, Exports: noExports{}}
	office := &testOffice{}
	if w, p := call(t, deps, office, "GET", "/v1/reports/daily", ""); w.Code != http.StatusBadRequest || len(p.Errors["from"]) != 1 || len(p.Errors["to"]) != 1 {
		t.Errorf("a report without its range: %d %+v", w.Code, p)
	}
	if w, _ := call(t, deps, office, "GET", "/v1/reports/daily?from=2026-11-01&to=2026-11-02", ""); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), `"days":[]`) {
		t.Errorf("a report: %d %s", w.Code, w.Body)
	}
	w, p := call(t, deps, office, "GET", "/v1/exports/orders?minTotal=ten&format=xml", "")
	if w.Code != http.StatusBadRequest || len(p.Errors["minTotal"]) != 1 || len(p.Errors["format"]) != 1 {
		t.Errorf("a bad export: %d %+v", w.Code, p)
	}
	if w, _ := call(t, deps, office, "GET", "/v1/exports/orders?currency=EUR", ""); w.Code != http.StatusOK ||
		!strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment; filename=ordersync-acme-orders-") {
		t.Errorf("an export: %d %v %s", w.Code, w.Header(), w.Body)
	}
	want := []string{"export.orders minTotal=ten&format=xml: 400", "export.orders account=acme&currency=EUR: ok"}
	if strings.Join(office.records, "|") != strings.Join(want, "|") {
		t.Errorf("recorded %q, want %q", office.records, want)
	}
}
