package ordersync

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMirroredOrderJSON: the raw document's own shape (unknown fields kept)
// plus account and sync; a raw document that is not an object falls back to
// the typed order instead of failing.
func TestMirroredOrderJSON(t *testing.T) {
	paid := time.Date(2026, 3, 8, 6, 59, 0, 0, time.UTC)
	m := MirroredOrder{Account: "default", Order: Order{OrderCode: "yY7Mcnd", Raw: []byte(`{"orderCode":"yY7Mcnd","future":1}`)}, Sync: SyncInfo{FetchCount: 2, PaidAt: &paid}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"future":1`, `"account":"default"`, `"fetchCount":2`, `"paidAt":"2026-03-08T06:59:00Z"`, `"statusChangedAt":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	m.Order.Raw = []byte("null")
	if b, err = json.Marshal(m); err != nil || !strings.Contains(string(b), `"orderCode":"yY7Mcnd"`) {
		t.Fatalf("null raw: %s, %v", b, err)
	}
}
