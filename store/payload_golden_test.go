package store

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
)

var updateGolden = flag.Bool("update", false, "write the golden files of the outbox payloads")

// TestOutboxPayloadGolden holds the outbox payload, the data of every NATS
// order event and of every HTTP delivery, to the bytes this release
// publishes: subscribers parse them, so MarshalJSON, the one encoder of a
// mirrored order, must keep them. -update is for a deliberate
// change of the format only.
// payloadOf is an order with doc as its fetched document.
func payloadOf(doc []byte) ordersync.MirroredOrder {
	seen := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
	paid, changed := seen.Add(1500*time.Millisecond), seen.Add(2*time.Second)
	return ordersync.MirroredOrder{
		Account: "acme & co",
		Order:   ordersync.Order{Raw: doc},
		Sync: ordersync.SyncInfo{FirstSeenAt: seen, LastSyncedAt: &seen, LastEventType: ordersync.EventCreated, FetchCount: 2, FetchSeq: 7,
			PaidAt: &paid, StatusChangedAt: &changed},
	}
}

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
			got, err := c.m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			testenv.Golden(t, filepath.Join("testdata", "payload_"+c.name+".json"), got, *updateGolden)
		})
	}
}
