package delivery_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync/delivery"
)

// bodyByMap is the body OrderEventBody must match byte for byte: the order
// decoded into a map, "statusChange" set, and encoding/json writing the
// event (what OrderEventBody did before it copied the members as they are).
// It is the tests' oracle, not a second way to build a body.
func bodyByMap(eventType string, at time.Time, order []byte, from string) ([]byte, bool) {
	var data map[string]json.RawMessage
	if err := json.Unmarshal(order, &data); err != nil || data == nil {
		return nil, false
	}
	change := struct {
		From *string `json:"from"`
		To   string  `json:"to"`
	}{}
	_ = json.Unmarshal(data["orderStatus"], &change.To)
	if from != "" {
		change.From = &from
	}
	data["statusChange"], _ = json.Marshal(change)
	b, err := json.Marshal(struct {
		Type      string                     `json:"type"`
		Timestamp time.Time                  `json:"timestamp"`
		Data      map[string]json.RawMessage `json:"data"`
	}{eventType, at.UTC(), data})
	return b, err == nil
}

func FuzzOrderEventBody(f *testing.F) {
	payload, err := os.ReadFile(filepath.Join("testdata", "order_payload.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload, "PENDING")
	for _, c := range orderEvents {
		f.Add([]byte(c.payload), c.from)
	}
	for _, p := range []string{`{"a":1,"a":2}`, `{"b":1,"a":2}`, `{"k\u00e9y":"x","orderStatus":"PAID"}`, `{"orderStatus":7,"account":["x"]}`,
		`{"zz":{"a":[1,{"b":"}"}]},"orderCode":"q\"\\"}`, "{\"s\":\"\u2028\"}", `{"statusChange":1,"t":2}`} {
		f.Add([]byte(p), "")
	}
	at := time.Date(2026, 3, 1, 9, 31, 2, 123456789, time.FixedZone("CET", 3600))
	f.Fuzz(func(t *testing.T, order []byte, from string) {
		want, ok := bodyByMap(delivery.EventOrderPaid, at, order, from)
		got, err := delivery.OrderEventBody(delivery.EventOrderPaid, at, order, from)
		if ok != (err == nil) {
			t.Fatalf("order %q: OrderEventBody err %v, map encoding ok %v", order, err, ok)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("order %q from %q:\n          got %s\n map encoding %s", order, from, got, want)
		}
	})
}
