package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// TestWriteError holds the one table from errors to answers.
func TestWriteError(t *testing.T) {
	_, err := ordersync.Accounts[int]{}.For("ghost")
	unknownAccount := fmt.Errorf("track order X: %w", err)
	tests := []struct {
		name       string
		err        error
		notFound   string
		status     int
		title      string
		retryAfter string
	}{
		{"a refused request", &ordersync.ValidationError{Title: "One or more validation errors occurred.", Fields: map[string][]string{"amount": {"x"}}},
			"", 400, "One or more validation errors occurred.", ""},
		{"not found, named", fmt.Errorf("find: %w", ordersync.ErrNotFound), "no endpoint ep_1", 404, "no endpoint ep_1", ""},
		{"not found upstream", &ordersync.UpstreamError{Kind: ordersync.UpstreamNotFound, Op: "get order X", StatusCode: 404}, "", 404, "get order X: HTTP 404 not_found", ""},
		{"rate limited", &ordersync.UpstreamError{Kind: ordersync.UpstreamRateLimited, Op: "get order X", StatusCode: 429, RetryAfter: 2500 * time.Millisecond}, "", 503, "get order X: HTTP 429 rate_limited", "3"},
		{"server error", &ordersync.UpstreamError{Kind: ordersync.UpstreamServer, Op: "create payment link", StatusCode: 500}, "", 503, "create payment link: HTTP 500 server", ""},
		{"key refused", &ordersync.UpstreamError{Kind: ordersync.UpstreamUnauthorized, Op: "create payment link", StatusCode: 401}, "", 502, "create payment link: HTTP 401 unauthorized", ""},
		{"bad endpoint", fmt.Errorf("create endpoint: %w", ordersync.ErrInvalidEndpoint), "", 400, "create endpoint: " + ordersync.ErrInvalidEndpoint.Error(), ""},
		{"bad secret", fmt.Errorf("rotate: %w", delivery.ErrInvalidSecret), "", 400, "rotate: " + delivery.ErrInvalidSecret.Error(), ""},
		{"the file's endpoint", fmt.Errorf("update: %w", ordersync.ErrManagedByConfig), "", 409, "update: " + ordersync.ErrManagedByConfig.Error(), ""},
		{"an account not served", unknownAccount, "", 404, "track order X: " + `account "ghost": unknown account`, ""},
		{"not found, unnamed", fmt.Errorf("find: %w", ordersync.ErrNotFound), "", 404, "find: not found", ""},
		{"a disabled endpoint", fmt.Errorf("test: %w", ordersync.ErrEndpointDisabled), "", 409, "test: " + ordersync.ErrEndpointDisabled.Error(), ""},
		{"a conflict", fmt.Errorf("create: %w", ordersync.ErrConflict), "", 409, "create: conflict", ""},
		{"an upstream refusal", &ordersync.UpstreamError{Kind: ordersync.UpstreamValidation, Op: "create payment link", StatusCode: 400,
			Validation: &ordersync.ValidationError{Title: "bad", Fields: map[string][]string{"amount": {"x"}}}}, "", 400, "bad", ""},
		{"a bad query", &ordersync.QueryError{Fields: map[string][]string{"status": {"unknown status"}}}, "", 400, "invalid query", ""},
		{"anything else", errors.New("disk on fire"), "", 500, "do it failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			if known := WriteError(w, "do it", tt.err, tt.notFound); known != (tt.status != 500) {
				t.Errorf("WriteError = %v for a %d", known, tt.status)
			}
			var p Problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("not a problem body: %s", w.Body)
			}
			if w.Code != tt.status || p.Title != tt.title || w.Header().Get("Retry-After") != tt.retryAfter {
				t.Errorf("got %d %q Retry-After %q, want %d %q %q", w.Code, p.Title, w.Header().Get("Retry-After"), tt.status, tt.title, tt.retryAfter)
			}
		})
	}
}

// TestErrorTableRowsReachable: every row of the table answers an error of
// its own, so no row hides behind an earlier one (as the not-found row once
// hid behind a special case before the table), and every row is named here.
func TestErrorTableRowsReachable(t *testing.T) {
	samples := map[string]error{
		"invalid query":        &ordersync.QueryError{Fields: map[string][]string{"limit": {"bad"}}},
		"validation":           &ordersync.ValidationError{Title: "t"},
		"not found":            fmt.Errorf("find order: %w", ordersync.ErrNotFound),
		"unknown account":      fmt.Errorf("track: %w", ordersync.ErrUnknownAccount),
		"upstream unavailable": &ordersync.UpstreamError{Kind: ordersync.UpstreamServer, Op: "get order X", StatusCode: 502},
		"upstream failed":      &ordersync.UpstreamError{Kind: ordersync.UpstreamProtocol, Op: "get order X", StatusCode: 200},
		"invalid endpoint":     fmt.Errorf("create endpoint: %w", ordersync.ErrInvalidEndpoint),
		"invalid secret":       fmt.Errorf("rotate: %w", delivery.ErrInvalidSecret),
		"managed by config":    fmt.Errorf("update: %w", ordersync.ErrManagedByConfig),
		"endpoint disabled":    fmt.Errorf("test: %w", ordersync.ErrEndpointDisabled),
		"conflict":             fmt.Errorf("create: %w", ordersync.ErrConflict),
	}
	seen := map[string]bool{}
	for _, row := range errorTable {
		if seen[row.name] {
			t.Errorf("two rows named %q", row.name)
		}
		seen[row.name] = true
		sample, ok := samples[row.name]
		if !ok {
			t.Errorf("row %q has no sample error here", row.name)
			continue
		}
		got, ok := rowFor(sample)
		if !ok || got.name != row.name {
			t.Errorf("row %q is unreachable: its sample is answered by %q", row.name, got.name)
		}
	}
	for name := range samples {
		if !seen[name] {
			t.Errorf("sample %q names no row of the table", name)
		}
	}
}

// TestStatusOf: the console shows an action's error with the status the
// API answers it with.
func TestStatusOf(t *testing.T) {
	if status, ok := StatusOf(fmt.Errorf("find order: %w", ordersync.ErrNotFound)); !ok || status != http.StatusNotFound {
		t.Errorf("ErrNotFound: %d %v, want 404", status, ok)
	}
	if _, ok := StatusOf(errors.New("disk on fire")); ok {
		t.Error("an unknown error has a row")
	}
}
