package paymentlink

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestSetSecretKey: a replaced key is what the next request sends; a key
// that cannot be sent is refused and the one in force stays.
func TestSetSecretKey(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, SecretKey: "old-key"})
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		t.Helper()
		var ue *ordersync.UpstreamError
		if _, err := c.GetOrder(context.Background(), "abc"); !errors.As(err, &ue) || ue.Kind != ordersync.UpstreamUnauthorized {
			t.Fatalf("GetOrder: %v, want the server's 401", err)
		}
	}
	get()
	if err := c.SetSecretKey("new-key"); err != nil {
		t.Fatal(err)
	}
	get()
	for _, bad := range []string{"", "a\nb"} {
		if err := c.SetSecretKey(bad); err == nil || !strings.Contains(err.Error(), "secret key") {
			t.Errorf("SetSecretKey(%q): %v", bad, err)
		}
	}
	get()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Bearer old-key", "Bearer new-key", "Bearer new-key"}; strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("Authorization sent: %q, want %q", seen, want)
	}
}
