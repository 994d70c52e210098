package store

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ordersync/ordersync"
)

var updateGolden = flag.Bool("update", false, "write the golden files of the outbox payloads")

// TestOutboxPayloadGolden holds the outbox payload, the data of every NATS
// order event and of every HTTP delivery, to the bytes this release
// publishes: subscribers parse them, so whichever encoder writes them (the
// scanner or MarshalJSON) must keep them. -update is for a deliberate
// change of the format only.
func TestOutboxPayloadGolden(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "order-detail.json"))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, fixture); err != nil {
		t.Fatal(err)
	}
	var typed ordersync.Order
	if err := json.Unmarshal(fixture, &typed); err != nil {
		t.Fatal(err)
	}
	typed.Raw = nil
	cases := []struct {
		name string
		m    ordersync.MirroredOrder
	}{
		// As the service answers: compact.
		{"detail", payloadOf(compact.Bytes())},
		// Spaced out, as the fixture is written.
		{"detail_spaced", payloadOf(fixture)},
		// Escapes, non-ASCII and the line separators a browser trips on.
		{"escapes", payloadOf([]byte(`{"name":"Tom & Jerry <3>","description":"línea\u2028separada","emoji":"😀","esc":"a\"b\\c\/d\n"}`))},
		// No fetched document: the typed order.
		{"typed", ordersync.MirroredOrder{Account: "default", Order: typed, Sync: payloadOf(nil).Sync}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := encodePayload(&c.m)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "payload_"+c.name+".json")
			if *updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodePayload changed the payload:\n got %s\nwant %s", got, want)
			}
			if marshalled, err := c.m.MarshalJSON(); err != nil || !bytes.Equal(marshalled, want) {
				t.Errorf("MarshalJSON: %v\n got %s\nwant %s", err, marshalled, want)
			}
		})
	}
}
