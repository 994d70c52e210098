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

func TestValidateApplyParams(t *testing.T) {
	order := &Order{OrderCode: "yY7Mcnd"}
	tests := []struct {
		name   string
		params []ApplyParams
		want   string
	}{
		{"none", nil, ""},
		{"valid", []ApplyParams{{Account: "default", Order: order, Seq: 1, Events: []EventRecord{{MsgID: "m1"}}}}, ""},
		{"no account", []ApplyParams{{Order: order, Seq: 1}}, "params[0]: Account is required"},
		{"no order", []ApplyParams{{Account: "default", Seq: 1}}, "params[0]: Order with an OrderCode is required"},
		{"no code", []ApplyParams{{Account: "default", Order: &Order{}, Seq: 1}}, "params[0]: Order with an OrderCode is required"},
		{"zero seq", []ApplyParams{{Account: "default", Order: order, Seq: 1}, {Account: "default", Order: order}}, "params[1] (yY7Mcnd): Seq must be positive, got 0"},
		{"event without id", []ApplyParams{{Account: "default", Order: order, Seq: 2, Events: []EventRecord{{MsgID: "m1"}, {}}}}, "params[0] (yY7Mcnd): event 1 has no MsgID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := ValidateApplyParams(tt.params); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("ValidateApplyParams = %q, want %q", got, tt.want)
			}
		})
	}
}
