package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/store"
)

// TestNotFoundRowAnswers: a store's ErrNotFound is answered by the API's
// not-found row, whose 404 takes the caller's title, through a real handler.
func TestNotFoundRowAnswers(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.Config{URL: filepath.Join(t.TempDir(), "m.db"), IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := New(Config{Orders: db})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:9090/v1/orders/nope42", nil))
	var p api.Problem
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	if w.Code != http.StatusNotFound || p.Title != "order nope42 is not in the mirror" {
		t.Errorf("got %d %q, want 404 naming the order", w.Code, p.Title)
	}
}

// TestFeaturesNotEnabled: a process without a part answers its routes 501
// naming the feature, before reading the request.
func TestFeaturesNotEnabled(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.Config{URL: filepath.Join(t.TempDir(), "m.db"), IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := New(Config{Orders: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, feature string }{
		{"POST", "/v1/orders/track", "tracking"},
		{"POST", "/v1/payment-links", "link creation"},
		{"GET", "/v1/dead-letters", "dead letters"},
		{"GET", "/v1/dead-letters/1", "dead letters"},
		{"POST", "/v1/dead-letters/1/replay", "replay"},
		{"POST", "/v1/dead-letters/replay", "replay"},
		{"GET", "/v1/endpoints", "endpoints"},
		{"POST", "/v1/endpoints/ep_1/test", "deliveries (the worker role)"},
		{"GET", "/v1/delivery-dead-letters", "delivery dead letters"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(tc.method, "http://127.0.0.1:9090"+tc.path, nil)
		srv.ServeHTTP(w, r)
		var p api.Problem
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		if w.Code != http.StatusNotImplemented || p.Title != tc.feature+" is not enabled in this process" {
			t.Errorf("%s %s: %d %q, want 501 naming %s", tc.method, tc.path, w.Code, p.Title, tc.feature)
		}
	}
}
