package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// TestGuard: what a browser can be made to send from another site — a
// text/plain or form write, a foreign Origin, a rebound DNS name — is
// refused before it reaches a handler, with a problem body saying why;
// the CLI's and a same-origin page's requests pass.
func TestGuard(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	id, err := e.db.AddDeadLetter(context.Background(), ordersync.DeadLetter{
		MsgID: "m-guard", Account: ordersync.DefaultAccount, Reason: ordersync.ReasonMalformed, Attempts: 1,
		LastError: "bad body", Body: []byte(`{}`), CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(e.url, "http://")
	_, port, _ := strings.Cut(host, ":")
	tests := []struct {
		name, method, path, host, origin, contentType, body string
		want                                                int
		wantTitle                                           string
	}{
		{"text/plain write", "POST", "/v1/dead-letters/replay", "", "", "text/plain", `{}`, 415, "Content-Type: application/json"},
		{"form write", "POST", "/v1/payment-links", "", "", "application/x-www-form-urlencoded", "amount=1", 415, "Content-Type"},
		{"write with a body and no Content-Type", "POST", "/v1/orders/track", "", "", "", `{"orderCode":"x"}`, 415, "Content-Type"},
		{"empty text/plain write", "POST", "/v1/dead-letters/replay", "", "", "text/plain", "", 415, "Content-Type"},
		{"foreign Origin on a JSON write", "POST", "/v1/dead-letters/replay", "", "http://evil.example", "application/json", `{}`, 403, "Origin"},
		{"foreign Origin on a read", "GET", "/v1/orders", "", "https://evil.example", "", "", 403, "Origin"},
		{"null Origin", "GET", "/v1/orders", "", "null", "", "", 403, "Origin"},
		{"rebound name reads orders", "GET", "/v1/orders", "rebind.evil.example:" + port, "", "", "", 403, "loopback"},
		{"rebound name reads metrics", "GET", "/metrics", "rebind.evil.example:" + port, "", "", "", 403, "loopback"},
		{"rebound name, same origin", "POST", "/v1/dead-letters/replay", "rebind.evil.example:" + port, "http://rebind.evil.example:" + port, "application/json", "", 403, "loopback"},
		{"a public address as Host", "GET", "/v1/orders", "192.0.2.1:" + port, "", "", "", 403, "loopback"},

		{"CLI read", "GET", "/v1/orders", "", "", "", "", 200, ""},
		{"localhost", "GET", "/metrics", "localhost:" + port, "", "", "", 200, ""},
		{"another 127/8 address", "GET", "/v1/orders", "127.0.0.2:" + port, "", "", "", 200, ""},
		{"IPv6 loopback", "GET", "/v1/orders", "[::1]:" + port, "", "", "", 200, ""},
		{"same-origin page", "GET", "/v1/orders", "", "http://" + host, "", "", 200, ""},
		{"JSON write with charset", "POST", "/v1/orders/track", "", "", "application/json; charset=utf-8", `{"orderCode":""}`, 400, "invalid request"},
		{"write without a body (dlq replay)", "POST", "/v1/dead-letters/replay", "", "", "", "", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, p := guardDo(t, e.url, tc.method, tc.path, tc.host, tc.origin, tc.contentType, tc.body, "")
			if status != tc.want {
				t.Fatalf("%s %s: %d %+v, want %d", tc.method, tc.path, status, p, tc.want)
			}
			if tc.wantTitle != "" && (p.Status != tc.want || !strings.Contains(p.Title, tc.wantTitle)) {
				t.Errorf("problem %+v, want status %d and a title naming %q", p, tc.want, tc.wantTitle)
			}
		})
	}
	dl, err := e.db.FindDeadLetter(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if dl.ReplayCount != 1 {
		t.Errorf("dead letter replayed %d times, want once: by the one request the guard let through", dl.ReplayCount)
	}
}

// TestGuardWithTokens: with tokens the API may listen beyond loopback, so
// any Host is served to a request that carries a token; Origin and
// Content-Type still apply.
func TestGuardWithTokens(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.Config{URL: testdb.SQLitePath(t), IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	server, err := admin.New(admin.Config{Orders: db, Tokens: operators("tok")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	if status, p := guardDo(t, srv.URL, "GET", "/v1/orders", "admin.internal.example:9090", "", "", "", "tok"); status != 200 {
		t.Errorf("a named host with a token: %d %+v, want 200", status, p)
	}
	if status, _ := guardDo(t, srv.URL, "GET", "/v1/orders", "admin.internal.example:9090", "", "", "", ""); status != 401 {
		t.Errorf("a named host without a token: %d, want 401", status)
	}
	if status, _ := guardDo(t, srv.URL, "GET", "/v1/orders", "admin.internal.example:9090", "http://evil.example", "", "", "tok"); status != 403 {
		t.Errorf("a foreign Origin with a token: %d, want 403", status)
	}
}

func guardDo(t *testing.T, base, method, path, host, origin, contentType, body, token string) (int, api.Problem) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p api.Problem
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &p); err != nil {
			t.Errorf("answer %d is not a problem body: %s", resp.StatusCode, b)
		}
	}
	return resp.StatusCode, p
}
