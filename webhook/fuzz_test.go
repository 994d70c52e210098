package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/ordersync/ordersync"
)

// FuzzReceiver posts arbitrary bodies with arbitrary signature headers (or
// a correct signature, when sign is set): the handler never panics, and
// never answers 2xx unless the signature is valid.
func FuzzReceiver(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "webhooks", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "", true)
		f.Add(b, Sign(oldSecret, b), false)
		f.Add(b, "deadbeef", false)
	}
	f.Add([]byte(`{"orderId":1e999}`), "", true)
	f.Add([]byte("{\"a\":\"\xff\"}"), "", true)
	f.Add([]byte(`{"metadata":[[[[[[[[[[]]]]]]]]]]}`), "", true)

	tq := startQueue(f, f.TempDir(), queueConfig())
	rc, err := New(Config{Secrets: []string{oldSecret}, Publisher: tq.q, MaxBodyBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(rc.Close)

	f.Fuzz(func(t *testing.T, body []byte, header string, sign bool) {
		if sign {
			header = Sign(oldSecret, body)
		}
		req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
		req.Header.Set(SignatureHeader, header)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		valid := Verify([]string{oldSecret}, header, body) == ordersync.SignatureValid
		switch code := w.Code; {
		case code >= 200 && code < 300 && !valid:
			t.Fatalf("answered %d without a valid signature", code)
		case !valid && code != http.StatusUnauthorized && code != http.StatusRequestEntityTooLarge:
			t.Fatalf("invalid signature answered %d, want 401", code)
		case valid && code != http.StatusOK && code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge:
			t.Fatalf("valid signature answered %d: %s", code, w.Body)
		case code == http.StatusOK:
			if _, err := ordersync.ParseEvent(body); err != nil {
				t.Fatalf("answered 200 for a body ParseEvent refuses: %v", err)
			}
		}
	})
}
